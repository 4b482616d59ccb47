-- KEYS[1] the id's incarnation, KEYS[2] the host's description,
-- KEYS[3] the hosts set, KEYS[4] its workers' ids
-- ARGV[1] this process's incarnation, ARGV[2] the description, ARGV[3] its
-- time to live (ms), ARGV[4] the heartbeat time (ms), ARGV[5] the host id,
-- ARGV[6] the workers' ids, ARGV[7] how long they are kept (s)
-- Answers 0, writing nothing, when a later process took the id over.
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[7])
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[5])
redis.call('SET', KEYS[4], ARGV[6], 'EX', ARGV[7])
return 1
