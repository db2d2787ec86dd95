<?php

declare(strict_types=1);

namespace Pristine;

/**
 * Content keys of templates: a hash of the files that define them. The
 * algorithm is the Go client's (client.ContentKey), so suites in any
 * language keyed by the same files share one template.
 */
final class ContentKey
{
    /**
     * Hashes the files that define a template (migrations, fixtures, schema
     * dumps). Each pattern is a file, a directory (every file under it) or a
     * glob; names are hashed relative to the pattern's base.
     *
     * @param list<string> $patterns
     * @param list<string> $extra strings hashed too (a tool's version, a setting)
     */
    public static function of(array $patterns, array $extra = []): string
    {
        $h = hash_init('sha256');
        hash_update($h, "pristine-content-key-v1\0");
        foreach ($extra as $e) {
            hash_update($h, "extra\0$e\0");
        }
        $n = 0;
        foreach ($patterns as $pat) {
            $matches = self::glob($pat);
            if ($matches === []) {
                throw new \InvalidArgumentException("content key: \"$pat\" matches no file: name the migrations and fixtures that define the template");
            }
            sort($matches, SORT_STRING);
            foreach ($matches as $m) {
                $base = dirname($m);
                foreach (self::walk($m) as $path) {
                    $rel = $base === '.' ? $path : substr($path, strlen($base) + 1);
                    hash_update($h, "file\0$rel\0" . filesize($path) . "\0");
                    hash_update_file($h, $path);
                    $n++;
                }
            }
        }
        if ($n === 0 && $extra === []) {
            throw new \InvalidArgumentException('content key: no files: name the migrations and fixtures that define the template');
        }
        return hash_final($h);
    }

    /**
     * Go's filepath.Glob: unlike PHP's glob(), a `*` or `?` also matches a
     * name that begins with a dot, and the matches of each directory come
     * sorted.
     *
     * @return list<string>
     */
    private static function glob(string $pat): array
    {
        if (!preg_match('/[*?[\\\\]/', $pat)) {
            return file_exists($pat) || is_link($pat) ? [$pat] : [];
        }
        $slash = strrpos($pat, '/');
        $dir = $slash === false ? '' : rtrim(substr($pat, 0, $slash + 1), '/');
        if ($slash !== false && $dir === '') {
            $dir = '/';
        }
        $file = $slash === false ? $pat : substr($pat, $slash + 1);
        $dirs = $dir === '' ? ['.'] : self::glob($dir);
        $out = [];
        foreach ($dirs as $d) {
            if (!is_dir($d)) {
                continue;
            }
            $names = array_values(array_diff(scandir($d) ?: [], ['.', '..']));
            sort($names, SORT_STRING);
            foreach ($names as $name) {
                if (fnmatch($file, $name)) {
                    $out[] = $d === '.' ? $name : ($d === '/' ? '/' . $name : $d . '/' . $name);
                }
            }
        }
        return $out;
    }

    /** @return \Generator<string> files under $path in the order Go's filepath.WalkDir visits them */
    private static function walk(string $path): \Generator
    {
        if (!is_dir($path) || is_link($path)) {
            yield $path;
            return;
        }
        $names = array_values(array_diff(scandir($path) ?: [], ['.', '..']));
        sort($names, SORT_STRING);
        foreach ($names as $name) {
            yield from self::walk($path . '/' . $name);
        }
    }
}
