local function sweep(slots, line, lines, delayed, parking, now, lease, keyhash)
  local expired = redis.call('ZRANGEBYSCORE', slots, '-inf', now)
  for _, id in ipairs(expired) do
    redis.call('ZREM', slots, id)
    if redis.call('ZSCORE', delayed, id) then
      redis.call('LPUSH', line, id)
      redis.call('SADD', lines, keyhash)
    end
  end
  local stale = redis.call('ZRANGEBYSCORE', parking, '-inf', now - lease)
  for _, id in ipairs(stale) do
    redis.call('ZREM', parking, id)
    redis.call('RPUSH', line, id)
    redis.call('SADD', lines, keyhash)
  end
end
local function drop_finished(slots, jobs)
  for _, id in ipairs(redis.call('ZRANGE', slots, 0, -1)) do
    if string.sub(id, 1, 8) ~= 'enqueue:' then
      local job = jobs .. id
      if redis.call('EXISTS', job) == 0 or redis.call('HEXISTS', job, 'finishedOn') == 1 then
        redis.call('ZREM', slots, id)
      end
    end
  end
end
local function fill(slots, line, lines, delayed, parking, now, lease, limit, keyhash)
  local out = {}
  while redis.call('ZCARD', slots) < limit do
    local id = redis.call('LPOP', line)
    if not id then break end
    if redis.call('ZSCORE', delayed, id) and not redis.call('ZSCORE', slots, id) then
      redis.call('ZADD', slots, now + lease, id)
      table.insert(out, id)
    end
  end
  if redis.call('LLEN', line) == 0 and redis.call('ZCARD', parking) == 0 then
    redis.call('SREM', lines, keyhash)
  end
  return out
end
