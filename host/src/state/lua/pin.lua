if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local first = redis.call('HSETNX', KEYS[1], 'airlock.digest', ARGV[1])
local pending = redis.call('HGETALL', KEYS[2])
for i = 1, #pending, 2 do
  if pending[i] ~= 'claim' then
    redis.call('HSETNX', KEYS[1], pending[i], pending[i + 1])
  end
end
if #pending > 0 then redis.call('DEL', KEYS[2]) end
local fields = redis.call('HMGET', KEYS[1], 'airlock.digest', 'airlock.limits',
  'airlock.producer', 'airlock.producerSeal')
return {fields[1], fields[2] or false, fields[3] or false, fields[4] or false, first}
