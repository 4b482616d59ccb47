local now, period, max_wait = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if max_wait == 0 then return period end
local first = tonumber(redis.call('GET', KEYS[1]) or '0')
if first == 0 then
  first = now
  redis.call('SET', KEYS[1], now, 'PX', max_wait + period)
end
local left = first + max_wait - now
if left < 0 then left = 0 end
if left < period then return left end
return period
