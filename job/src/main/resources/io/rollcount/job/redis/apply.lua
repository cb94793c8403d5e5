-- Rollcount's guarded writes (see RedisApplyScript): counts where a replay can reach, sorted sets, MAX and
-- the watermark. KEYS[1..ARGV[1]] are read first with one MGET; the writes follow in ARGV[2..], their keys
-- after those. Returns {applied, skipped, status, key1, error1, ...}: status has one character per write, in
-- order ('a' applied, 's' skipped, 'r' rejected), then each rejected key with its error.

-- the key whose command failed: what a rejection names (set just before the error is raised)
local failkey = nil
local function fail(k, msg)
  failkey = k
  error({err = msg})
end
-- a command on key k: an error names k (redis.call raises it, the write's pcall catches it)
local function call(k, ...)
  failkey = k
  return redis.call(...)
end
local function int(k, s)
  if not string.match(s, '^%-?%d+$') then fail(k, 'ERR rollcount: value is not an integer') end
  return s
end
-- compares decimal integer strings exactly (no 2^53 limit of Lua's doubles)
local function cmp(a, b)
  local na = string.sub(a, 1, 1) == '-'
  local nb = string.sub(b, 1, 1) == '-'
  if na ~= nb then return na and -1 or 1 end
  local r
  if #a ~= #b then r = (#a < #b) and -1 or 1
  elseif a == b then r = 0
  else r = (a < b) and -1 or 1 end
  if na then r = -r end
  return r
end
-- SET with GET: Redis refuses it with WRONGTYPE on a key of another type instead of replacing that key;
-- PXAT the absolute expiry unless it is '0'
local function set(k, v, at)
  failkey = k
  if at ~= '0' then redis.call('SET', k, v, 'PXAT', at, 'GET') else redis.call('SET', k, v, 'GET') end
end
-- every value the writes compare against, read up front with one MGET (KEYS[1..ARGV[1]])
local nreads = tonumber(ARGV[1])
local pre, pi = {}, 1
local i = 1
while i <= nreads do
  local j = math.min(nreads, i + 999)
  local r = redis.call('MGET', unpack(KEYS, i, j))
  for x = 1, #r do pre[i + x - 1] = r[x] end
  i = j + 1
end
-- a COUNT's kind says whether it has a version key ('v'), is monotone ('m') and restores a missing key ('r':
-- written where the key is missing, whatever the version key says)
local COUNT = {C = 0, Cv = 1, Cm = 2, Cvm = 3, Cr = 4, Cvr = 5, Cmr = 6, Cvmr = 7}
-- errors a retry of the whole call can cure (the server is briefly unable to write): the call fails with
-- them, and the writer retries it. Redis refuses a script's first write on OOM, so none is applied.
-- TRANSIENT and ACCESS are RedisErrors.TRANSIENT and RedisErrors.ACCESS (RedisErrorsTest compares them).
local TRANSIENT = {'OOM', 'MISCONF', 'NOREPLICAS', 'LOADING', 'BUSY', 'TRYAGAIN', 'READONLY',
  'MASTERDOWN', 'CLUSTERDOWN'}
-- refused access
local ACCESS = {'NOPERM', 'NOAUTH', 'WRONGPASS'}
local rejected = {}
local status = {}
local applied, skipped = 0, 0
-- every other error rejects one write's key: the other writes of the call go on
local function attempt(k, f, ...)
  failkey = nil
  local ok, e = pcall(f, ...)
  if ok then return true end
  e = tostring(type(e) == 'table' and e.err or e)
  for _, p in ipairs(TRANSIENT) do
    if string.sub(e, 1, #p + 1) == p .. ' ' then error({err = e}) end
  end
  -- refused access is the operator's to fix, not one key's: it fails the call, naming the key
  for _, p in ipairs(ACCESS) do
    if string.sub(e, 1, #p + 1) == p .. ' ' then error({err = e .. ' (key ' .. (failkey or k) .. ')'}) end
  end
  -- a fault of the script itself is no key's: it fails the call
  if string.match(e, '^user_script:') or (failkey == nil and not string.match(e, '^ERR rollcount')) then
    error({err = 'ERR rollcount script: ' .. e})
  end
  rejected[#rejected + 1] = failkey or k
  rejected[#rejected + 1] = e
  status[#status + 1] = 'r'
  return false
end
local function done(ok)
  if ok then applied = applied + 1; status[#status + 1] = 'a'
  else skipped = skipped + 1; status[#status + 1] = 's' end
end
local ki, ai = nreads + 1, 2
local function arg() local a = ARGV[ai]; ai = ai + 1; return a end
local function key() local k = KEYS[ki]; ki = ki + 1; return k end
-- COUNT: skipped if the stored version is >= version, or if monotone and the stored value is larger; else
-- SET of the value, and of the version where not monotone or where a version exists (a monotone write keeps
-- a version current but creates none). A write that restores a missing key (restore) is applied where the
-- key is missing, and sets its version key.
local function wcount(k, vk, sv, cur, mono, restore, value, version, at)
  local restoring = restore and not cur
  if restoring then sv = false end
  if (sv and cmp(int(vk, sv), version) >= 0) or (cur and cmp(int(k, cur), value) > 0) then
    done(false)
  else
    set(k, value, at)
    if vk and (not mono or sv or restoring) then set(vk, version, at) end
    done(true)
  end
end
local function wmax(k, value)
  local cur = call(k, 'GET', k)
  if cur and cmp(int(k, cur), value) >= 0 then done(false) else
    set(k, value, '0')
    done(true)
  end
end
-- the job's watermark: this writer's in the hash h, their minimum into k once every writer has reported
local function wwatermark(h, k, subtask, parallelism, value)
  call(h, 'HSET', h, subtask, value)
  call(h, 'PEXPIRE', h, '604800000')
  local min = nil
  if call(h, 'HLEN', h) >= parallelism then
    for _, v in ipairs(call(h, 'HVALS', h)) do
      if min == nil or cmp(v, min) < 0 then min = v end
    end
  end
  local cur = nil
  if min then cur = call(k, 'GET', k) end
  if min and (not cur or cmp(int(k, cur), min) < 0) then
    set(k, min, '0')
    done(true)
  else done(false) end
end
-- members and scores ARGV[from .. from + 2n - 1] replace the sorted set k; restore: also where k is missing,
-- whatever the version key says
local function wzset(k, vk, restore, version, at, from, n)
  if vk and not (restore and call(k, 'EXISTS', k) == 0) then
    local sv = call(vk, 'GET', vk)
    if sv and cmp(int(vk, sv), version) > 0 then
      done(false)
      return
    end
  end
  -- the version first: a SET, which Redis refuses at maxmemory, where the DEL below is not refused and
  -- would let the rest of the script past Redis's OOM check
  if vk then set(vk, version, at) end
  call(k, 'DEL', k)
  local i = 0
  while i < n do
    local m = math.min(n - i, 200)
    call(k, 'ZADD', k, unpack(ARGV, from + 2 * i, from + 2 * (i + m) - 1))
    i = i + m
  end
  if at ~= '0' and n > 0 then call(k, 'PEXPIREAT', k, at) end
  done(true)
end
-- each write under its own pcall (see attempt): one key's error rejects that key only
while ai <= #ARGV do
  local kind = arg()
  local cf = COUNT[kind]
  if cf then
    local value, version, at = arg(), arg(), arg()
    local k = key()
    local vk, sv, cur = nil, false, false
    local mono, restore = cf % 4 >= 2, cf >= 4
    if cf % 2 == 1 then vk = key(); sv = pre[pi]; pi = pi + 1 end
    if mono or restore then cur = pre[pi]; pi = pi + 1 end
    attempt(k, wcount, k, vk, sv, cur, mono, restore, value, version, at)
  elseif kind == 'M' then
    local value = arg()
    local k = key()
    attempt(k, wmax, k, value)
  elseif kind == 'W' then
    local subtask, parallelism, value = arg(), tonumber(arg()), arg()
    local h, k = key(), key()
    attempt(k, wwatermark, h, k, subtask, parallelism, value)
  elseif kind == 'Z' then
    local hasv, version, at, n = arg(), arg(), arg(), tonumber(arg())
    local k = key()
    local vk = nil
    if hasv ~= '0' then vk = key() end
    local from = ai
    ai = ai + 2 * n
    attempt(k, wzset, k, vk, hasv == '2', version, at, from, n)
  else
    error({err = 'ERR rollcount: unknown write kind ' .. tostring(kind)})
  end
end
local out = {applied, skipped, table.concat(status)}
for _, x in ipairs(rejected) do out[#out + 1] = x end
return out
