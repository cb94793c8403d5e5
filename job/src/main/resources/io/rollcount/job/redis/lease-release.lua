-- Gives a key prefix's lease up if this token holds it (see PrefixGuard). KEYS[1] the lease; ARGV[1] the token.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
