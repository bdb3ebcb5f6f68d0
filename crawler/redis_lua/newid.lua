-- newid: the next URL ID of the frontier.  KEYS[1] = "{g}:lv".  ARGV: the highest ID the
-- caller has met.  A counter at or below it went back (a Redis restored from an older
-- snapshot): refused, so an ID is never given twice.  Returns the ID.
local n = redis.call('HINCRBY', LV, 'nextid', 1)
if n <= tonumber(ARGV[1]) then
  redis.call('HINCRBY', LV, 'nextid', -1)
  return redis.error_reply('WEBSIFT-LOST its URL ID counter went back to ' .. n ..
    ', not above ID ' .. ARGV[1] .. ' this crawler has met (restored from an older snapshot?)')
end
return n
