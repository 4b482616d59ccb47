-- KEYS[1] the id's incarnation, KEYS[2] the host's description, KEYS[3]
-- the hosts set; ARGV[1] this process's incarnation, ARGV[2] the host id.
-- Leaves nothing of a later process under the id.
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[2])
return 1
