-- Takes or renews a key prefix's lease (see PrefixGuard): returns 1, or the token of the job that holds it.
-- KEYS[1] the lease, KEYS[2] the job mark (in the lease's slot); ARGV[1] the token, ARGV[2] the lease's ttl in ms.
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return v end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('GET', KEYS[2]) ~= ARGV[1] then redis.call('SET', KEYS[2], ARGV[1]) end
return 1
