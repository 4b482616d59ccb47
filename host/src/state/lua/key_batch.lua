local now, lease, jobs = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local stamp, expiry = ARGV[1], ARGV[4]
local out = {}
for i = 1, (#ARGV - 4) / 5 do
  local a, k = 4 + (i - 1) * 5, 2 + (i - 1) * 3
  local kind, id, limit, keyhash = ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]), ARGV[a + 4]
  local slots, line, parking = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  if kind == 'acquire' or kind == 'acquire-park' then
    local got = acquire(slots, line, KEYS[1], KEYS[2], parking, id, now, lease, limit, keyhash,
                        kind == 'acquire-park', jobs, tonumber(ARGV[a + 5]), expiry, stamp)
    if got == 1 then out[i] = {'1'} else out[i] = {} end
  else
    out[i] = line_op(slots, line, KEYS[1], KEYS[2], parking, id, now, lease, limit, keyhash, kind, jobs)
  end
end
return out
