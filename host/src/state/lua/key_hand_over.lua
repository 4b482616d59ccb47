for i = 1, #KEYS do
  local token, id = ARGV[2 * i - 1], ARGV[2 * i]
  local score = redis.call('ZSCORE', KEYS[i], token)
  if score then
    redis.call('ZREM', KEYS[i], token)
    redis.call('ZADD', KEYS[i], score, id)
  end
end
return 0
