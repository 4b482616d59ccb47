if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 0
   and redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[2])
local ttl = tonumber(ARGV[3])
for i = 1, 2 do
  local left = redis.call('PTTL', KEYS[i])
  if left < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end
end
return 1
