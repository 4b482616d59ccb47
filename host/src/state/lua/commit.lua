local pending = redis.call('HGETALL', KEYS[2])
if #pending == 0 then return 0 end
local moved = 0
if redis.call('EXISTS', KEYS[1]) == 1 then
  for i = 1, #pending, 2 do
    if pending[i] ~= 'claim' then
      redis.call('HSETNX', KEYS[1], pending[i], pending[i + 1]) moved = 1
    end
  end
end
redis.call('DEL', KEYS[2])
return moved
