local moved = 0
for _, id in ipairs(ARGV) do
  if redis.call('LREM', KEYS[1], 1, id) > 0 then
    redis.call('RPUSH', KEYS[1], id)
    moved = moved + 1
  end
end
return moved
