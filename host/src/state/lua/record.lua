local a = 1
for i = 1, #KEYS do
  local digest = ARGV[a]
  local n = tonumber(ARGV[a + 1])
  a = a + 2
  if redis.call('EXISTS', KEYS[i]) == 1 then
    if digest ~= '' then redis.call('HSETNX', KEYS[i], 'airlock.digest', digest) end
    redis.call('HSET', KEYS[i], unpack(ARGV, a, a + 2 * n - 1))
  end
  a = a + 2 * n
end
return #KEYS
