local now, t, tol = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local allow_at = tat - tol
if allow_at > now then return {2, math.ceil(allow_at - now)} end
redis.call('SET', KEYS[1], tat + t, 'PX', math.ceil(tat + t - now + tol + 1000))
return {0}
