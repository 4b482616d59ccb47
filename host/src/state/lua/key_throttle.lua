local now, t, tol = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local retention, hold = tonumber(ARGV[5]), tonumber(ARGV[6])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - retention)
local started = tonumber(redis.call('GET', KEYS[3]) or '0')
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local function admit(at)
  local after = math.max(started, at) + t
  local px = math.ceil(after - now + tol + 1000)
  redis.call('SET', KEYS[3], after, 'PX', px)
  if tat < after then redis.call('SET', KEYS[1], after, 'PX', px) end
  if redis.call('EXISTS', KEYS[4]) == 1 then
    redis.call('HSET', KEYS[4], 'processedOn', math.floor(at))
  end
end
local granted = redis.call('ZSCORE', KEYS[2], ARGV[1])
if granted then
  granted = tonumber(granted)
  if granted > now then return {1, granted} end
  local at = started - tol
  if at > now + hold then
    redis.call('ZADD', KEYS[2], at, ARGV[1])
    redis.call('PEXPIRE', KEYS[2], math.ceil(at - now + retention))
    return {1, math.ceil(at)}
  end
  redis.call('ZREM', KEYS[2], ARGV[1])
  if at <= now then admit(now) return {0} end
  admit(at)
  return {3, math.ceil(at)}
end
if tat < now then tat = now end
local allow_at = tat - tol
tat = tat + t
redis.call('SET', KEYS[1], tat, 'PX', math.ceil(tat - now + tol + 1000))
if allow_at <= now then admit(now) return {0} end
redis.call('ZADD', KEYS[2], allow_at, ARGV[1])
redis.call('PEXPIRE', KEYS[2], math.ceil(allow_at - now + retention))
return {1, allow_at}
