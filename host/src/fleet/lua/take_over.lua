-- KEYS[1] the id's incarnation, KEYS[2] the host's description,
-- KEYS[3] its workers' ids, KEYS[4] the claim on its recovery
-- ARGV[1] the new process's incarnation, ARGV[2] how long it is kept (s),
-- ARGV[3] how long the claim lasts (ms)
-- Answers {} when no earlier process left workers' ids, {-1} while a live
-- host is recovering the id, else {the description's time left in ms
-- (-2: gone), the workers' ids}, the claim now this process's.
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
local workers = redis.call('GET', KEYS[3])
if not workers then return {} end
if not redis.call('SET', KEYS[4], ARGV[1], 'NX', 'PX', ARGV[3]) then return {-1} end
return {redis.call('PTTL', KEYS[2]), workers}
