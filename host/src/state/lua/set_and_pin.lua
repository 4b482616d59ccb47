if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] ~= '' then redis.call('HSETNX', KEYS[1], 'airlock.digest', ARGV[1]) end
if #ARGV > 1 then redis.call('HSET', KEYS[1], unpack(ARGV, 2)) end
return 1
