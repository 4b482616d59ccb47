-- KEYS[1] the id's incarnation, KEYS[2] the host's description,
-- KEYS[3] its workers' ids, KEYS[4] the claim on its recovery
-- ARGV[1] the new process's incarnation, ARGV[2] how long it is kept (s),
-- ARGV[3] how long the claim lasts (ms)
-- Answers {} when no earlier process left workers' ids, {-1} while a live
-- host is recovering the id, else {the description's time left in ms
-- (-2: gone), the workers' ids}, the claim now this process's. A claim
-- the replaced process held (it died giving its own predecessor's jobs
-- back) is taken over: it names that process's incarnation.
local previous = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
local workers = redis.call('GET', KEYS[3])
if not workers then return {} end
local claim = redis.call('GET', KEYS[4])
if claim and claim ~= previous then return {-1} end
redis.call('SET', KEYS[4], ARGV[1], 'PX', ARGV[3])
return {redis.call('PTTL', KEYS[2]), workers}
