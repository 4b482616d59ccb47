local function move_processed_on(jobs, id, taken, now, stamp)
  if taken and taken < now then redis.call('HSET', jobs .. id, 'processedOn', stamp) end
end
local function acquire(slots, line, lines, delayed, parking, id, now, lease, limit, keyhash, park,
                       jobs, taken, expiry, stamp)
  if redis.call('ZADD', slots, 'NX', expiry, id) == 1 then
    if redis.call('ZCARD', slots) <= limit then
      move_processed_on(jobs, id, taken, now, stamp)
      return 1
    end
    redis.call('ZREM', slots, id)
  else
    local held = tonumber(redis.call('ZSCORE', slots, id))
    if held > now then redis.call('ZADD', slots, expiry, id) return 1 end
  end
  sweep(slots, line, lines, delayed, parking, now, lease, keyhash)
  if redis.call('ZSCORE', slots, id) then
    redis.call('ZADD', slots, expiry, id) return 1
  end
  if redis.call('ZCARD', slots) >= limit then
    drop_finished(slots, jobs)
  end
  local free = redis.call('ZCARD', slots) < limit
  if not free then
    for _, member in ipairs(redis.call('ZRANGE', slots, 0, -1)) do
      if string.sub(member, 1, 8) == 'enqueue:' then
        redis.call('ZREM', slots, member)
        free = true
        break
      end
    end
  end
  if free then
    redis.call('ZADD', slots, expiry, id)
    move_processed_on(jobs, id, taken, now, stamp)
    return 1
  end
  if park then
    redis.call('ZADD', parking, now, id)
    redis.call('SADD', lines, keyhash)
  end
  return 0
end
local function line_op(slots, line, lines, delayed, parking, id, now, lease, limit, keyhash, mode, jobs)
  if mode == 'park' then
    redis.call('RPUSH', line, id) redis.call('ZREM', parking, id)
    redis.call('SADD', lines, keyhash)
  elseif mode == 'release' then
    redis.call('ZREM', slots, id)
    if redis.call('LLEN', line) == 0 then return {} end
  end
  sweep(slots, line, lines, delayed, parking, now, lease, keyhash)
  if redis.call('LLEN', line) > 0 and redis.call('ZCARD', slots) >= limit then
    drop_finished(slots, jobs)
  end
  return fill(slots, line, lines, delayed, parking, now, lease, limit, keyhash)
end
