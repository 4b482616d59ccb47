if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[3] ~= '' and redis.call('HGET', KEYS[1], 'airlock.producer') ~= ARGV[3]
then return -2 end
if ARGV[4] ~= '' and redis.call('HEXISTS', KEYS[1], ARGV[4]) == 0 then return -3 end
if ARGV[5] ~= '' and redis.call('HGET', KEYS[1], ARGV[5]) ~= ARGV[6] then return -3 end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return -1 end
return 1
