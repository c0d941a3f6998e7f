<?php
// One side-by-side run: N PHP worker processes consume from a Symfony limiter as fast as they can
// for a few seconds, on one hot key or spread over many keys, and the parent counts decisions per
// second and requests admitted beyond the limit. Two backends behind the same LimiterInterface:
//   symfony  Symfony's own limiter: CacheStorage over RedisAdapter, a RedisStore lock per key
//            (read the state, decide in PHP, write it back, inside the lock)
//   symfony-nolock  the same without the lock (Symfony's default when no lock factory is given):
//            what the lock buys
//   rl       the rl adapter (integrations/php): one RL.CHECK per decision, atomic on the server
// The limits last the whole run (an hour's window, a bucket refilling one token an hour), so no
// key may admit more than its limit (1000 on the hot key, 100 on each of many; +1 refill for the
// bucket): anything above is over-admission.
//
//   php symfony_vs_rl.php BACKEND POLICY KEYS WORKERS SECONDS RL_PORT REDIS_PORT
//   e.g. php symfony_vs_rl.php rl token_bucket 1 8 5 6380 6379      -> one JSON line

foreach (['RateLimiter', 'Cache', 'Lock'] as $component) {
    require_once "/usr/share/php/Symfony/Component/$component/autoload.php";
}
spl_autoload_register(static function (string $class): void {
    $prefix = 'Rl\\RateLimiter\\';
    if (strncmp($class, $prefix, strlen($prefix)) === 0) {
        require __DIR__ . '/../../integrations/php/src/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
    }
});

use Rl\RateLimiter\RlRateLimiterFactory;
use Symfony\Component\Cache\Adapter\RedisAdapter;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\RedisStore;
use Symfony\Component\RateLimiter\RateLimiterFactory;
use Symfony\Component\RateLimiter\Storage\CacheStorage;

[, $backend, $policy, $keys, $workers, $seconds, $rlPort, $redisPort] = $argv;
$keys = (int) $keys;
$workers = (int) $workers;
// Reachable within the run on every key, so that a limiter that over-admits shows it.
$limit = $keys === 1 ? 1000 : 100;
$id = 'bench' . bin2hex(random_bytes(4));
$config = ['id' => $id, 'policy' => $policy, 'limit' => $limit] + ($policy === 'token_bucket'
    ? ['rate' => ['interval' => '1 hour', 'amount' => 1]] : ['interval' => '1 hour']);

$factory = static function () use ($backend, $config, $rlPort, $redisPort) {
    $redis = new Redis();
    $redis->connect('127.0.0.1', (int) ($backend === 'rl' ? $rlPort : $redisPort), 1.0, null, 0, 5.0);
    if ($backend === 'rl') {
        return new RlRateLimiterFactory($config, $redis);
    }

    return new RateLimiterFactory($config, new CacheStorage(new RedisAdapter($redis, 'rl-bench')),
                                  $backend === 'symfony' ? new LockFactory(new RedisStore($redis)) : null);
};

$dir = sys_get_temp_dir() . "/$id";
mkdir($dir);
$start = microtime(true) + 0.5;  // every worker connected before the clock starts
$pids = [];
for ($w = 0; $w < $workers; ++$w) {
    $pid = pcntl_fork();
    if ($pid === 0) {
        $f = $factory();
        $limiters = [];
        $accepted = array_fill(0, $keys, 0);
        $decisions = 0;
        $errors = 0;
        mt_srand($w + 1);
        while (microtime(true) < $start) {
            usleep(1000);
        }
        $end = $start + (float) $seconds;
        while (microtime(true) < $end) {
            $k = $keys === 1 ? 0 : mt_rand(0, $keys - 1);
            $limiters[$k] ??= $f->create("k$k");
            try {
                if ($limiters[$k]->consume()->isAccepted()) {
                    ++$accepted[$k];
                }
                ++$decisions;
            } catch (Throwable $e) {
                ++$errors;
            }
        }
        file_put_contents("$dir/$w", json_encode([$decisions, $errors, $accepted]));
        exit(0);
    }
    $pids[] = $pid;
}
foreach ($pids as $pid) {
    pcntl_waitpid($pid, $status);
}
$decisions = $errors = 0;
$perKey = array_fill(0, $keys, 0);
foreach (glob("$dir/*") as $file) {
    [$d, $e, $a] = json_decode(file_get_contents($file), true);
    $decisions += $d;
    $errors += $e;
    foreach ($a as $k => $n) {
        $perKey[$k] += $n;
    }
    unlink($file);
}
rmdir($dir);
// The bucket may refill one token in the hour's window; the fixed window none.
$bound = $limit + ($policy === 'token_bucket' ? 1 : 0);
$beyond = 0;
foreach ($perKey as $n) {
    $beyond += max(0, $n - $bound);
}
echo json_encode(['backend' => $backend, 'policy' => $policy, 'keys' => $keys, 'workers' => $workers,
                  'seconds' => (float) $seconds, 'decisions_per_s' => (int) round($decisions / $seconds),
                  'admitted' => array_sum($perKey), 'admitted_beyond_limit' => $beyond, 'errors' => $errors]), "\n";
