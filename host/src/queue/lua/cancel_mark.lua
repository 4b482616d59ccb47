if redis.call('EXISTS', KEYS[1]) == 0 then return {0, 'unknown'} end
local id = ARGV[1]
if redis.call('ZSCORE', KEYS[2], id) then return {-1, 'completed'} end
if redis.call('ZSCORE', KEYS[3], id) then return {-1, 'failed'} end
local state = 'unknown'
if redis.call('ZSCORE', KEYS[4], id) then state = 'delayed'
elseif redis.call('ZSCORE', KEYS[5], id) then state = 'prioritized'
elseif redis.call('LPOS', KEYS[6], id) then state = 'active'
elseif redis.call('LPOS', KEYS[7], id) or redis.call('LPOS', KEYS[8], id)
then state = 'waiting'
elseif redis.call('ZSCORE', KEYS[9], id) then state = 'waiting-children' end
redis.call('HSET', KEYS[1], 'defa', ARGV[2])
return {1, state}
