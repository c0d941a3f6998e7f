-- Fixed window in Redis + Lua (INCRBY + PEXPIRE in one atomic script, as the seed asks): the
-- baseline bench/run measures RL.CHECK ... FIXED_WINDOW against. The window starts at the key's
-- first request and ends with its TTL, so the clock is Redis's own expiry; no TIME call needed.
-- KEYS[1] = counter key; ARGV = limit, window_ms, cost.
-- Reply: {allowed, limit, remaining, retry_after_ms, reset_after_ms}.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3]) or 1

local n = redis.call('INCRBY', KEYS[1], cost)
if n == cost then
  redis.call('PEXPIRE', KEYS[1], window)
end
local ttl = redis.call('PTTL', KEYS[1])
if n > limit then
  -- A denial consumes nothing: take the cost back.
  redis.call('DECRBY', KEYS[1], cost)
  local retry = ttl
  if cost > limit then retry = -1 end
  return {0, limit, math.max(0, limit - (n - cost)), retry, ttl}
end
return {1, limit, limit - n, 0, ttl}
