if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local holder = redis.call('HGET', KEYS[2], 'claim')
if holder and holder ~= ARGV[1] then return 2 end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'claim', ARGV[1], unpack(ARGV, 3))
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
