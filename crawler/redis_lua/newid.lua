-- newid: the next URL ID of the frontier.  KEYS[1] = "{g}:lv".  ARGV: the highest ID the
-- caller has met.  A counter at or below it went back (a Redis restored from an older
-- snapshot): refused, so an ID is never given twice.  Returns the ID.
local n = redis.call('HINCRBY', LV, 'nextid', 1)
if n <= tonumber(ARGV[1]) then
  redis.call('HINCRBY', LV, 'nextid', -1)
  return redis.error_reply('WEBSIFT-LOST the frontier\'s URL ID counter went back to ' .. n ..
    ' below ' .. ARGV[1] .. ' (Redis restored from an older snapshot?)')
end
return n
