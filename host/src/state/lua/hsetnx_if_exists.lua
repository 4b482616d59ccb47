if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
end return 0
