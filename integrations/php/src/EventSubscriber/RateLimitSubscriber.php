<?php
// The source article's RateLimitSubscriber over rl: on REQUEST (priority 7: after routing, 32, and
// the firewall, 8, so the tenant is known; before any controller work) the route's limiter is
// asked once; a denial answers 429 at once. On RESPONSE the server's header values
// (X-RateLimit-*, RateLimit-Policy, RateLimit, and Retry-After on a 429) are copied onto whatever
// response goes out. When the limiter cannot be asked within the connection's timeout (tens of
// ms), the route's failure mode decides: fail-open lets the request through without rate-limit
// headers, fail-closed answers 503 with Retry-After 1 (as examples/clients do). An error reply
// (a wrong limit) is a bug and is thrown, not hidden behind the failure mode.

namespace Rl\RateLimiter\EventSubscriber;

use Psr\Log\LoggerInterface;
use Rl\RateLimiter\LimiterUnavailableException;
use Rl\RateLimiter\RlRateLimit;
use Symfony\Component\EventDispatcher\EventSubscriberInterface;
use Symfony\Component\HttpFoundation\JsonResponse;
use Symfony\Component\HttpKernel\Event\RequestEvent;
use Symfony\Component\HttpKernel\Event\ResponseEvent;
use Symfony\Component\HttpKernel\KernelEvents;

final class RateLimitSubscriber implements EventSubscriberInterface
{
    /** The request attribute that carries the decision from REQUEST to RESPONSE. */
    public const ATTRIBUTE = '_rate_limit';

    /** @var PolicyRegistry */
    private $policies;
    /** @var LoggerInterface|null */
    private $logger;
    /** @var bool */
    private $down = false;  // log once per outage, not once per request

    public function __construct(PolicyRegistry $policies, ?LoggerInterface $logger = null)
    {
        $this->policies = $policies;
        $this->logger = $logger;
    }

    public static function getSubscribedEvents(): array
    {
        return [
            KernelEvents::REQUEST => ['onRequest', 7],
            KernelEvents::RESPONSE => ['onResponse', 0],
        ];
    }

    public function onRequest(RequestEvent $event): void
    {
        if (!$event->isMainRequest()) {
            return;
        }
        $request = $event->getRequest();
        $policy = $this->policies->forRoute($request->attributes->get('_route'));
        if ($policy === null) {
            return;
        }
        $tenant = $request->attributes->get('tenant_id') ?? 'ip:' . $request->getClientIp();
        try {
            $result = $policy->factory()->create((string) $tenant)->consume();
        } catch (LimiterUnavailableException $e) {
            if (!$this->down && $this->logger !== null) {
                $this->logger->error('rate limiter unreachable: fail-open routes allow, fail-closed routes answer 503', ['exception' => $e]);
            }
            $this->down = true;
            if (!$policy->failOpen()) {
                $event->setResponse(new JsonResponse(['error' => 'rate_limiter_unavailable'], 503, ['Retry-After' => '1']));
            }

            return;
        }
        if ($this->down && $this->logger !== null) {
            $this->logger->info('rate limiter reachable again');
        }
        $this->down = false;
        $request->attributes->set(self::ATTRIBUTE, $result);
        if (!$result->isAccepted()) {
            $event->setResponse(new JsonResponse(['error' => 'rate_limited'], 429));
        }
    }

    public function onResponse(ResponseEvent $event): void
    {
        $result = $event->getRequest()->attributes->get(self::ATTRIBUTE);
        if ($result instanceof RlRateLimit) {
            $event->getResponse()->headers->add($result->getHeaders());
        }
    }
}
