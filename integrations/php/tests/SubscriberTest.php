<?php
// The source article's RateLimitSubscriber in a real Symfony HttpKernel: REQUEST at priority 7,
// the server's headers on RESPONSE, 429 with the server's Retry-After, and per route fail-open
// (200, no rate-limit headers) or fail-closed (503, Retry-After 1) when the limiter hangs (no
// reply within the connection's 50 ms timeout) or is gone (connection reset).

namespace Rl\RateLimiter\Tests;

use PHPUnit\Framework\TestCase;
use Rl\RateLimiter\EventSubscriber\PolicyRegistry;
use Rl\RateLimiter\EventSubscriber\RateLimitSubscriber;
use Rl\RateLimiter\EventSubscriber\RoutePolicy;
use Rl\RateLimiter\RlRateLimiterFactory;
use Symfony\Component\EventDispatcher\EventDispatcher;
use Symfony\Component\HttpFoundation\Request;
use Symfony\Component\HttpFoundation\RequestStack;
use Symfony\Component\HttpFoundation\Response;
use Symfony\Component\HttpKernel\Controller\ArgumentResolver;
use Symfony\Component\HttpKernel\Controller\ControllerResolverInterface;
use Symfony\Component\HttpKernel\Event\RequestEvent;
use Symfony\Component\HttpKernel\HttpKernel;
use Symfony\Component\HttpKernel\KernelEvents;

final class SubscriberTest extends TestCase
{
    /** @var array<int, resource> */
    private $servers = [];

    protected function tearDown(): void
    {
        foreach ($this->servers as $pid => $proc) {
            posix_kill($pid, SIGCONT);
            posix_kill($pid, SIGKILL);
            proc_close($proc);
        }
        $this->servers = [];
    }

    public function targets(): array
    {
        return Targets::all();
    }

    public function testSubscribedAfterRoutingAndFirewall(): void
    {
        $this->assertSame([KernelEvents::REQUEST => ['onRequest', 7], KernelEvents::RESPONSE => ['onResponse', 0]],
                          RateLimitSubscriber::getSubscribedEvents());
    }

    /** A kernel whose controller answers 200 "ok"; a firewall stand-in at priority 8 sets the tenant. */
    private function kernel(PolicyRegistry $policies, int &$controllerCalls): HttpKernel
    {
        $dispatcher = new EventDispatcher();
        $dispatcher->addSubscriber(new RateLimitSubscriber($policies));
        $dispatcher->addListener(KernelEvents::REQUEST, static function (RequestEvent $e): void {
            $e->getRequest()->attributes->set('tenant_id', $e->getRequest()->headers->get('X-Tenant'));
        }, 8);
        $resolver = new class($controllerCalls) implements ControllerResolverInterface {
            private $calls;

            public function __construct(int &$calls)
            {
                $this->calls = &$calls;
            }

            public function getController(Request $request)
            {
                return function (): Response {
                    ++$this->calls;

                    return new Response('ok');
                };
            }
        };

        return new HttpKernel($dispatcher, $resolver, new RequestStack(), new ArgumentResolver());
    }

    private static function get(HttpKernel $kernel, string $route, string $tenant): Response
    {
        $request = Request::create("/$route");
        $request->attributes->set('_route', $route);
        $request->headers->set('X-Tenant', $tenant);

        return $kernel->handle($request);
    }

    /** @dataProvider targets */
    public function testLimitsHeadersAnd429(string $library, string $server): void
    {
        $client = Targets::connect($library, $server);
        $id = 'search' . bin2hex(random_bytes(4));
        $search = new RlRateLimiterFactory(['id' => $id, 'policy' => 'token_bucket', 'limit' => 2,
                                            'rate' => ['interval' => '1 minute', 'amount' => 2]], $client);
        $calls = 0;
        $kernel = $this->kernel(new PolicyRegistry(['health' => null], new RoutePolicy($search, true)), $calls);
        $first = self::get($kernel, 'search', 'alice');
        $this->assertSame(200, $first->getStatusCode());
        $this->assertSame('2', $first->headers->get('X-RateLimit-Limit'));
        $this->assertSame('1', $first->headers->get('X-RateLimit-Remaining'));
        $this->assertSame("\"$id\";q=2;w=60", $first->headers->get('RateLimit-Policy'));
        $this->assertNull($first->headers->get('Retry-After'));
        $this->assertSame('0', self::get($kernel, 'search', 'alice')->headers->get('X-RateLimit-Remaining'));
        $denied = self::get($kernel, 'search', 'alice');
        $this->assertSame(429, $denied->getStatusCode());
        $this->assertContains($denied->headers->get('Retry-After'), ['29', '30']);
        $this->assertMatchesRegularExpression('/^"' . $id . '";r=0;t=(29|30)$/', $denied->headers->get('RateLimit'));
        $this->assertSame(2, $calls, 'a denied request never reaches the controller');
        $this->assertSame(200, self::get($kernel, 'search', 'bob')->getStatusCode(), 'tenants are apart');
        $health = self::get($kernel, 'health', 'alice');
        $this->assertSame(200, $health->getStatusCode());
        $this->assertNull($health->headers->get('X-RateLimit-Limit'), 'an unlimited route');
    }

    /** Starts a private rl-server; returns [pid, port]. */
    private function startServer(): array
    {
        $bin = (string) getenv('RL_SERVER_BIN');
        $proc = proc_open([$bin, '--port', '0', '--threads', '1', '--quiet'], [1 => ['pipe', 'w'], 2 => ['file', '/dev/null', 'a']], $pipes);
        $pid = proc_get_status($proc)['pid'];
        $this->servers[$pid] = $proc;
        $deadline = microtime(true) + 20;
        while (($line = fgets($pipes[1])) !== false && microtime(true) < $deadline) {
            if (preg_match('/^rl-server ready: listening on .*:(\d+)$/', trim($line), $m)) {
                return [$pid, (int) $m[1]];
            }
        }
        $this->fail('rl-server did not start');
    }

    public function libraries(): array
    {
        return ['phpredis' => ['phpredis'], 'predis' => ['predis']];
    }

    /**
     * The outage is staged on a private rl-server, once per client library.
     *
     * @dataProvider libraries
     */
    public function testFailOpenAndFailClosedWithinTheTimeout(string $library): void
    {
        [$pid, $port] = $this->startServer();
        $timeout = 0.05;
        if ($library === 'phpredis') {
            $client = new \Redis();
            $client->connect('127.0.0.1', $port, $timeout, null, 0, $timeout);
        } else {
            $client = new \Predis\Client(['host' => '127.0.0.1', 'port' => $port, 'timeout' => $timeout, 'read_write_timeout' => $timeout]);
            $client->connect();
        }
        $open = new RlRateLimiterFactory(['id' => 'search', 'policy' => 'token_bucket', 'limit' => 5,
                                          'rate' => ['interval' => '1 minute', 'amount' => 5]], $client);
        $closed = new RlRateLimiterFactory(['id' => 'login', 'policy' => 'fixed_window', 'limit' => 5,
                                            'interval' => '1 minute'], $client);
        $calls = 0;
        $kernel = $this->kernel(new PolicyRegistry(['search' => new RoutePolicy($open, true),
                                                    'login' => new RoutePolicy($closed, false)]), $calls);
        $this->assertSame('4', self::get($kernel, 'login', 'alice')->headers->get('X-RateLimit-Remaining'));

        foreach (['hung' => SIGSTOP, 'gone' => SIGKILL] as $phase => $signal) {
            posix_kill($pid, $signal);
            if ($signal === SIGKILL) {
                proc_close($this->servers[$pid]);  // reaps it: its port is closed
                unset($this->servers[$pid]);
            }
            $start = microtime(true);
            $search = self::get($kernel, 'search', 'alice');
            $login = self::get($kernel, 'login', 'alice');
            $elapsed = microtime(true) - $start;
            $this->assertSame(200, $search->getStatusCode(), "$phase: fail-open");
            $this->assertNull($search->headers->get('X-RateLimit-Remaining'), "$phase: no invented headers");
            $this->assertSame(503, $login->getStatusCode(), "$phase: fail-closed");
            $this->assertSame('1', $login->headers->get('Retry-After'));
            // Two requests, each waiting at most its 50 ms timeout (plus a loaded machine's slack).
            $this->assertLessThan(1.0, $elapsed, "$phase: bounded by the timeout");
        }
    }
}
