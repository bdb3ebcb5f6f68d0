-- apply a transfer to the virtual page, once.  KEYS[1] = "{g}:lv".  ARGV: transfer ID, amount.
if redis.call('SISMEMBER', P .. ':ap', ARGV[1]) == 1 then return 0 end
redis.call('SADD', P .. ':ap', ARGV[1])
redis.call('HINCRBYFLOAT', LV, 'virtual', ARGV[2])
return 1
