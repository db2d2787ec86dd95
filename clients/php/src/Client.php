<?php

declare(strict_types=1);

namespace Pristine;

/**
 * HTTP/JSON client of a pristine daemon, over its unix socket (curl's
 * CURLOPT_UNIX_SOCKET_PATH) or over loopback TCP with a bearer token.
 */
final class Client
{
    /** The longest wait_seconds the daemon accepts in one request (1 hour). */
    public const MAX_WAIT = 3600.0;

    private function __construct(
        private readonly ?string $socket,
        private readonly string $base,
        private readonly ?string $token,
        /** https: the CA file to verify the daemon against (the root's tls/ca.pem). */
        private readonly ?string $caFile = null,
        /** The holder group of this client's leases (Pristine-Group); a group token fixes it. */
        private readonly ?string $group = null,
    ) {
    }

    /** A client of the daemon listening on a unix socket. */
    public static function unix(string $socket): self
    {
        return new self($socket, 'http://pristine', null);
    }

    /**
     * A client of a daemon serving TCP (`pristine serve --listen ADDR`);
     * for https with the root's own CA, $caFile is its tls/ca.pem.
     */
    public static function tcp(string $url, string $token, ?string $caFile = null, ?string $group = null): self
    {
        $url = str_contains($url, '://') ? $url : 'http://' . $url;
        return new self(null, rtrim($url, '/'), $token, $caFile, $group);
    }

    /** $PRISTINE_ROOT, else /var/lib/pristine for root, else ~/.local/share/pristine. */
    public static function defaultRoot(): string
    {
        $root = getenv('PRISTINE_ROOT');
        if (is_string($root) && $root !== '') {
            return $root;
        }
        if (function_exists('posix_geteuid') && posix_geteuid() === 0) {
            return '/var/lib/pristine';
        }
        return rtrim((string) getenv('HOME'), '/') . '/.local/share/pristine';
    }

    /** The daemon of PRISTINE_URL (+ PRISTINE_TOKEN or the root's token file), else the socket of the root. */
    public static function fromEnv(): self
    {
        $url = getenv('PRISTINE_URL');
        if (is_string($url) && $url !== '') {
            $token = getenv('PRISTINE_TOKEN');
            if (!is_string($token) || $token === '') {
                $file = self::defaultRoot() . '/token';
                $token = @file_get_contents($file);
                if ($token === false) {
                    throw new PristineException("PRISTINE_URL is set but PRISTINE_TOKEN is not, and $file cannot be read: set PRISTINE_TOKEN to the token in $file on the daemon's host");
                }
            }
            return self::tcp($url, trim($token), getenv('PRISTINE_CA_FILE') ?: null, getenv('PRISTINE_GROUP') ?: null);
        }
        return self::unix(self::defaultRoot() . '/pristine.sock');
    }

    public function where(): string
    {
        return $this->socket ?? $this->base;
    }

    /**
     * Sends one request; returns [status, decoded JSON] for a status in $ok,
     * throws PristineException otherwise.
     *
     * @param list<int> $ok
     * @return array{0:int,1:mixed}
     */
    public function request(string $method, string $path, mixed $body = null, array $ok = [200], float $timeout = 0): array
    {
        $ch = curl_init($this->base . $path);
        $headers = ['Content-Type: application/json'];
        if ($this->token !== null) {
            $headers[] = 'Authorization: Bearer ' . $this->token;
        }
        if ($this->group !== null) {
            $headers[] = 'Pristine-Group: ' . $this->group;
        }
        $opts = [CURLOPT_CUSTOMREQUEST => $method, CURLOPT_RETURNTRANSFER => true, CURLOPT_HTTPHEADER => $headers];
        if ($this->socket !== null) {
            $opts[CURLOPT_UNIX_SOCKET_PATH] = $this->socket;
        }
        if ($this->caFile !== null) {
            $opts[CURLOPT_CAINFO] = $this->caFile;
        }
        if ($body !== null) {
            $opts[CURLOPT_POSTFIELDS] = json_encode($body, JSON_THROW_ON_ERROR);
        }
        if ($timeout > 0) {
            $opts[CURLOPT_TIMEOUT_MS] = (int) ($timeout * 1000);
        }
        curl_setopt_array($ch, $opts);
        $raw = curl_exec($ch);
        $errno = curl_errno($ch);
        $status = (int) curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
        $err = curl_error($ch);
        curl_close($ch);
        if ($raw === false) {
            if ($errno === CURLE_COULDNT_CONNECT) {
                throw new NoDaemonException(sprintf('no pristine daemon is running on %s: start one with `pristine pool up` or `pristine serve`', $this->where()));
            }
            throw new PristineException("$method $path: $err");
        }
        $data = trim((string) $raw) === '' ? null : json_decode((string) $raw, true);
        if (in_array($status, $ok, true)) {
            return [$status, $data];
        }
        if (is_array($data) && isset($data['error']) && $data['error'] !== '') {
            throw new PristineException((string) $data['error'], $status, null, (string) ($data['code'] ?? ''));
        }
        throw new PristineException("$method $path: HTTP $status: " . substr((string) $raw, 0, 500), $status);
    }

    /** @return array<string,mixed> */
    public function health(): array
    {
        return $this->request('GET', '/v1/health')[1];
    }

    /**
     * POST /v1/templates: status "ready", "build" (the caller builds: the
     * connection fields are set) or "building" (someone else is).
     *
     * @return array<string,mixed>
     */
    public function beginTemplate(string $name, string $key, ?string $database = null, ?string $cache = null, ?int $keyFiles = null, bool $allowStale = false): array
    {
        $body = ['name' => $name, 'key' => $key];
        // $keyFiles given: the build runs code, keyed by that many file paths (the daemon refuses
        // none with PristineException::UNKEYED_BUILD, unless $allowStale).
        if ($keyFiles !== null) {
            $body['runs_code'] = true;
            if ($keyFiles > 0) {
                $body['key_files'] = $keyFiles;
            }
        }
        if ($allowStale) {
            $body['allow_stale'] = true;
        }
        if ($database !== null && $database !== '') {
            $body['database'] = $database;
        }
        if ($cache !== null && $cache !== '') {
            $body['cache'] = $cache;
        }
        return $this->request('POST', '/v1/templates', $body, [200, 201, 423])[1];
    }

    /** @return array<string,mixed> */
    public function finishTemplate(string $hash): array
    {
        return $this->request('PUT', '/v1/templates/' . rawurlencode($hash))[1];
    }

    public function abortTemplate(string $hash): void
    {
        $this->request('DELETE', '/v1/templates/' . rawurlencode($hash));
    }

    /** @return array<string,mixed> status ready, building or failed */
    public function waitTemplate(string $ref, float $wait): array
    {
        return $this->request('GET', sprintf('/v1/templates/%s?wait=%.3f', rawurlencode($ref), $wait), null, [200, 410, 423], $wait + 30)[1];
    }

    /** @return array<string,mixed> */
    public function pool(string $template): array
    {
        return $this->request('GET', '/v1/pools/' . rawurlencode($template))[1];
    }

    /**
     * Brings a pool up and returns its status once every slot is ready. For
     * a smaller pool of the same template that is up, grows it to $size: the
     * status comes back at once, the new slots start in the background.
     * $minReady is how many slots must answer before the status comes (0:
     * the daemon's default, its first round of starts; $size: every slot);
     * the others go on starting in the daemon and serve waiting leases.
     *
     * @return array<string,mixed>
     */
    public function poolUp(string $template, int $size, int $minReady = 0): array
    {
        $ch = curl_init($this->base . '/v1/pools');
        $headers = ['Content-Type: application/json'];
        if ($this->token !== null) {
            $headers[] = 'Authorization: Bearer ' . $this->token;
        }
        if ($this->group !== null) {
            $headers[] = 'Pristine-Group: ' . $this->group;
        }
        $opts = [CURLOPT_POST => true, CURLOPT_RETURNTRANSFER => true, CURLOPT_HTTPHEADER => $headers,
            CURLOPT_POSTFIELDS => json_encode(['template' => $template, 'size' => $size] + ($minReady > 0 ? ['min_ready' => $minReady] : []), JSON_THROW_ON_ERROR)];
        if ($this->socket !== null) {
            $opts[CURLOPT_UNIX_SOCKET_PATH] = $this->socket;
        }
        if ($this->caFile !== null) {
            $opts[CURLOPT_CAINFO] = $this->caFile;
        }
        curl_setopt_array($ch, $opts);
        $raw = curl_exec($ch);
        $errno = curl_errno($ch);
        $status = (int) curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
        curl_close($ch);
        if ($raw === false) {
            if ($errno === CURLE_COULDNT_CONNECT) {
                throw new NoDaemonException(sprintf('no pristine daemon is running on %s: start one with `pristine pool up` or `pristine serve`', $this->where()));
            }
            throw new PristineException('pool up: the daemon did not answer');
        }
        if ($status !== 200) {
            $d = json_decode((string) $raw, true);
            throw new PristineException(is_array($d) && isset($d['error']) ? (string) $d['error'] : "pool up: HTTP $status", $status);
        }
        foreach (explode("\n", (string) $raw) as $line) {
            $ev = json_decode($line, true);
            if (!is_array($ev)) {
                continue;
            }
            if (($ev['error'] ?? '') !== '') {
                throw new PristineException((string) $ev['error'], (int) ($ev['code'] ?? 500));
            }
            if (isset($ev['status'])) {
                return $ev['status'];
            }
        }
        throw new PristineException('pool up: the daemon closed the connection before the pool was ready: see serve.log under the root');
    }

    /** @return array<string,mixed> */
    public function poolDown(string $template): array
    {
        return $this->request('DELETE', '/v1/pools/' . rawurlencode($template))[1];
    }

    /**
     * Leases a database, waiting up to $wait seconds for a free one (and for
     * a pool a peer is still bringing up). $pid (default: this process) is
     * the holder process: the daemon reclaims the lease when it exits.
     * $minSize is how many slots the run uses at once: a smaller pool grows
     * to it first, at once, or the call fails at once (507) naming the
     * daemon's --max-memory/--max-disk when they do not fit.
     */
    public function lease(?string $template = null, string $holder = '', float $wait = 60, ?int $pid = null, float $ttl = 0, int $minSize = 0): Lease
    {
        $body = ['holder' => $holder, 'pid' => $pid ?? getmypid()];
        if ($minSize > 0) {
            $body['min_size'] = $minSize;
        }
        if ($template !== null && $template !== '') {
            $body['template'] = $template;
        }
        if ($ttl > 0) {
            $body['ttl_seconds'] = $ttl;
        }
        $deadline = microtime(true) + $wait;
        while (true) {
            // The daemon waits at most an hour per request; longer waits loop.
            $body['wait_seconds'] = min(max($deadline - microtime(true), 0.001), self::MAX_WAIT);
            $pause = 0.1;
            try {
                return Lease::fromArray($this->request('POST', '/v1/leases', $body, [200], $body['wait_seconds'] + 30)[1]);
            } catch (PristineException $e) {
                if ($e->status === 429) {
                    $pause = 1.0; // too many waiters: the daemon's Retry-After
                } elseif ($e->status !== 503) {
                    throw $e;
                }
                if (microtime(true) + $pause >= $deadline) {
                    throw $e;
                }
            }
            usleep((int) ($pause * 1e6));
        }
    }

    /** @return array<string,mixed> */
    public function release(string $id, bool $unchanged = false): array
    {
        return $this->request('DELETE', '/v1/leases/' . rawurlencode($id) . ($unchanged ? '?mode=unchanged' : ''))[1];
    }

    public function keep(string $id): Lease
    {
        return Lease::fromArray($this->request('POST', '/v1/leases/' . rawurlencode($id) . '/keep')[1]);
    }

    /**
     * Makes template $name from lease $id's current state: everything
     * committed before the fork starts (docs/architecture.md, "Fork"). The
     * lease and its connections go on. With $key (e.g. ContentKey::of the
     * fixture files), the fork is filed under its parent's key and this
     * one, and a later fork with the same key answers at once with the
     * template made before. Returns ['template' => [...], 'built' => bool,
     * 'seconds' => float]; lease the fork by name once a pool of it is up
     * (Pristine::ensurePool).
     *
     * @return array<string,mixed>
     */
    public function fork(string $id, string $name, ?string $key = null): array
    {
        $body = ['name' => $name];
        if ($key !== null && $key !== '') {
            $body['key'] = $key;
        }
        return $this->request('POST', '/v1/leases/' . rawurlencode($id) . '/fork', $body)[1];
    }

    public function getLease(string $id): Lease
    {
        return Lease::fromArray($this->request('GET', '/v1/leases/' . rawurlencode($id))[1]);
    }

    /** @return list<array<string,mixed>> leases without credentials */
    public function leases(): array
    {
        return $this->request('GET', '/v1/leases')[1];
    }

    public function shutdown(): void
    {
        $this->request('POST', '/v1/shutdown', null, [200], 120);
    }
}
