<?php
// The servers the tests run against, as run_tests.sh started them: rl-server on a loopback port
// (RL_SERVER_PORT) and redis-server with rl.so on a unix socket (RL_REDIS_SOCKET), each through
// phpredis and through Predis.

namespace Rl\RateLimiter\Tests;

final class Targets
{
    /** @return array<string, array{0: string, 1: string}> name => [client library, server] */
    public static function all(): array
    {
        $out = [];
        foreach (['phpredis', 'predis'] as $library) {
            foreach (['rl-server', 'redis+rl.so'] as $server) {
                $out["$library -> $server"] = [$library, $server];
            }
        }

        return $out;
    }

    /** A new connection with a read timeout of `$timeout` seconds. */
    public static function connect(string $library, string $server, float $timeout = 2.0)
    {
        $port = (int) getenv('RL_SERVER_PORT');
        $socket = (string) getenv('RL_REDIS_SOCKET');
        if ($port === 0 || $socket === '') {
            throw new \RuntimeException('RL_SERVER_PORT and RL_REDIS_SOCKET are not set: run the tests with run_tests.sh');
        }
        if ($library === 'phpredis') {
            $redis = new \Redis();
            if ($server === 'rl-server') {
                $redis->connect('127.0.0.1', $port, $timeout, null, 0, $timeout);
            } else {
                $redis->connect($socket, 0, $timeout, null, 0, $timeout);
            }

            return $redis;
        }
        $params = $server === 'rl-server'
            ? ['scheme' => 'tcp', 'host' => '127.0.0.1', 'port' => $port]
            : ['scheme' => 'unix', 'path' => $socket];

        return new \Predis\Client($params + ['timeout' => $timeout, 'read_write_timeout' => $timeout]);
    }
}
