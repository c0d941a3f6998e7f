<?php
// rl-server from PHP with phpredis (Debian's php-redis), including the outage path.
//
//     RL_PORT=6380 php php_phpredis.php CLIENT ROUTE...        e.g.  alice search login
//
// Each ROUTE is checked once for CLIENT and printed as an HTTP status:
//     search 200 remaining=1 | search 429 retry-after=30 | search 200 limiter=down | login 503 ...
// A limiter that cannot be reached (refused, reset, no reply within RL_TIMEOUT_MS, wrong
// password) is not the client's fault: a fail-open route lets the request through without
// rate-limit headers, a fail-closed one answers 503 with a short Retry-After. An error *reply* (a
// bad limit, an unknown policy) is a bug in the request and is thrown, not hidden behind the
// failure mode.

// route => [what RL.CHECK checks, fail open?]. ['POLICY', 'api'] names a policy of rl.toml instead.
const ROUTES = [
    'search' => [['TOKEN_BUCKET', '2', '1m'], true],
    'login' => [['SLIDING_LOG', '2', '1m'], false],
];

final class LimiterDown extends RuntimeException {}

// One connection per PHP process (pconnect would keep it across requests under PHP-FPM).
function limiter(): Redis {
    static $redis = null;
    $timeout = (int) (getenv('RL_TIMEOUT_MS') ?: 50) / 1000;
    try {
        if ($redis === null || !$redis->isConnected()) {
            $redis = new Redis();
            $redis->connect(getenv('RL_HOST') ?: '127.0.0.1', (int) (getenv('RL_PORT') ?: 6380),
                            $timeout, null, 0, $timeout);
            if (getenv('RL_PASSWORD') !== false) $redis->auth(getenv('RL_PASSWORD'));
        }
    } catch (RedisException $e) {
        $redis = null;
        throw new LimiterDown($e->getMessage(), 0, $e);
    }
    return $redis;
}

// Returns [status, headers to copy onto the response, decided by the failure mode?].
function rate_limit(string $route, string $client): array {
    static $limiterDown = false;  // log once per outage, not once per request
    [$limits, $failOpen] = ROUTES[$route];
    try {
        $redis = limiter();
        $args = ["$route:$client", ...$limits, 'HEADERS'];
        $reply = $redis->rawCommand('RL.CHECK', ...$args);
    } catch (RedisException | LimiterDown $e) {
        if (!$limiterDown) {
            error_log("rate limiter unreachable ({$e->getMessage()}): fail-open routes allow, "
                      . 'fail-closed routes answer 503');
            $limiterDown = true;
        }
        return $failOpen ? [200, [], true] : [503, ['Retry-After' => '1'], true];
    }
    if ($reply === false) {  // an error reply: the request is wrong, not the limiter down
        throw new LogicException('RL.CHECK: ' . $redis->getLastError());
    }
    if ($limiterDown) {
        error_log('rate limiter reachable again');
        $limiterDown = false;
    }
    // phpredis speaks RESP2: [allowed, limit, remaining, retry_ms, reset_ms, [name, value, ...]].
    [$allowed, , , , , $flat] = $reply;
    $headers = [];
    for ($i = 0; $i + 1 < count($flat); $i += 2) $headers[$flat[$i]] = $flat[$i + 1];
    return [$allowed ? 200 : 429, $headers, false];
}

$client = $argv[1];
foreach (array_slice($argv, 2) as $route) {
    [$status, $headers, $down] = rate_limit($route, $client);
    // In a web request: http_response_code($status); foreach ($headers as $n => $v) header("$n: $v");
    $line = "$route $status";
    if (isset($headers['Retry-After'])) $line .= " retry-after={$headers['Retry-After']}";
    elseif (isset($headers['X-RateLimit-Remaining'])) $line .= " remaining={$headers['X-RateLimit-Remaining']}";
    echo $line, $down ? ' limiter=down' : '', "\n";
}
