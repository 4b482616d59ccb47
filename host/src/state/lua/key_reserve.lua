local now, lease = tonumber(ARGV[1]), tonumber(ARGV[2])
local out, a = {}, 3
local i = 0
while a <= #ARGV do
  i = i + 1
  local keyhash, limit, n = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local k = 2 + (i - 1) * 3
  local slots, line, parking = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  sweep(slots, line, KEYS[1], KEYS[2], parking, now, lease, keyhash)
  local got = 0
  if redis.call('LLEN', line) == 0 and redis.call('ZCARD', parking) == 0 then
    while got < n and redis.call('ZCARD', slots) < limit do
      redis.call('ZADD', slots, now + lease, ARGV[a + 3 + got])
      got = got + 1
    end
  end
  out[i] = got
  a = a + 3 + n
end
return out
