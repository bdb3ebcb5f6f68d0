-- apply a transfer to the virtual page, once.  KEYS[1] = "{g}:lv".
-- ARGV: transfer ID, amount, now, seconds to remember the ID.
if applied_before(ARGV[1], ARGV[3], ARGV[4]) then return 0 end
redis.call('HINCRBYFLOAT', LV, 'virtual', ARGV[2])
return 1
