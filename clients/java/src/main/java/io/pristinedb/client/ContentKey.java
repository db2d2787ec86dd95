package io.pristinedb.client;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The content key of a template: SHA-256 over the files that define it
 * (migrations, fixtures, schema dumps), each file's name relative to its
 * pattern's base, its size and its bytes, plus extra strings (a tool's
 * version, a setting). The algorithm is the Go client's
 * ({@code client.ContentKey}), Python's ({@code content_key}) and PHP's
 * ({@code ContentKey::of}): suites in any of them keyed by the same files
 * share one template. Each pattern is a file, a directory (every file under
 * it) or a glob in Go's {@code filepath.Glob} syntax ({@code *}, {@code ?},
 * {@code [a-z]}, {@code [^a]}); relative patterns are resolved against the
 * working directory, and the key does not depend on where the checkout lives.
 */
public final class ContentKey {
    private ContentKey() {
    }

    private static final Comparator<String> BYTES = (a, b) ->
            Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));

    /** The key of the files patterns name, and of extra. */
    public static String of(List<String> patterns, List<String> extra) {
        return of(patterns, extra, Path.of(""));
    }

    /** The key of the files patterns name, and of extra; relative patterns are read under dir. */
    public static String of(List<String> patterns, List<String> extra, Path dir) {
        MessageDigest h;
        try {
            h = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        update(h, "pristine-content-key-v1\0");
        for (String e : extra) {
            update(h, "extra\0" + e + "\0");
        }
        int n = 0;
        for (String pat : patterns) {
            List<String> matches;
            try {
                matches = glob(pat, dir);
            } catch (IllegalArgumentException e) {
                throw new PristineException("content key: pattern \"" + pat + "\": " + e.getMessage(), e);
            }
            if (matches.isEmpty()) {
                throw new PristineException("content key: \"" + pat + "\" matches no file"
                        + (Path.of(pat).isAbsolute() ? "" : " (under " + dir.toAbsolutePath().normalize() + ")")
                        + ": name the migrations and fixtures that define the template");
            }
            matches.sort(BYTES);
            for (String m : matches) {
                String base = dirName(m);
                List<String> files = new ArrayList<>();
                walk(m, dir, files);
                for (String path : files) {
                    Path p = dir.resolve(path);
                    try {
                        long size = Files.size(p);
                        update(h, "file\0" + rel(base, path) + "\0" + size + "\0");
                        try (InputStream in = Files.newInputStream(p)) {
                            byte[] buf = new byte[1 << 16];
                            for (int r; (r = in.read(buf)) > 0; ) {
                                h.update(buf, 0, r);
                            }
                        }
                    } catch (IOException e) {
                        throw new PristineException("content key: " + e, e);
                    }
                    n++;
                }
            }
        }
        if (n == 0 && extra.isEmpty()) {
            throw new PristineException("content key: no files: name the migrations and fixtures that define the template");
        }
        return HexFormat.of().formatHex(h.digest());
    }

    private static void update(MessageDigest h, String s) {
        h.update(s.getBytes(StandardCharsets.UTF_8));
    }

    /** Files under path in the order Go's filepath.WalkDir visits them (symlinks are not followed into). */
    private static void walk(String path, Path dir, List<String> out) {
        Path p = dir.resolve(path);
        if (!Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
            out.add(path);
            return;
        }
        List<String> names = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(p)) {
            for (Path c : ds) {
                names.add(c.getFileName().toString());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        names.sort(BYTES);
        for (String name : names) {
            walk(join(path, name), dir, out);
        }
    }

    /** Go's filepath.Glob: the names matching pattern, relative patterns under dir. */
    static List<String> glob(String pattern, Path dir) {
        List<String> out = new ArrayList<>();
        if (!hasMeta(pattern)) {
            if (Files.exists(dir.resolve(pattern), LinkOption.NOFOLLOW_LINKS)) {
                out.add(pattern);
            }
            return out;
        }
        int i = pattern.lastIndexOf('/');
        String d = clean(pattern.substring(0, i + 1));
        String file = pattern.substring(i + 1);
        Pattern re = segment(file);
        List<String> dirs = hasMeta(d) ? glob(d, dir) : List.of(d);
        for (String parent : dirs) {
            Path pp = dir.resolve(parent);
            if (!Files.isDirectory(pp)) {
                continue;
            }
            List<String> names = new ArrayList<>();
            try (DirectoryStream<Path> ds = Files.newDirectoryStream(pp)) {
                for (Path c : ds) {
                    String name = c.getFileName().toString();
                    if (re.matcher(name).matches()) {
                        names.add(name);
                    }
                }
            } catch (IOException e) {
                continue; // Glob ignores I/O errors
            }
            names.sort(BYTES);
            for (String name : names) {
                out.add(join(parent, name));
            }
        }
        return out;
    }

    private static boolean hasMeta(String s) {
        return s.indexOf('*') >= 0 || s.indexOf('?') >= 0 || s.indexOf('[') >= 0 || s.indexOf('\\') >= 0;
    }

    /** One path element of a Go glob as a regular expression. */
    private static Pattern segment(String glob) {
        StringBuilder re = new StringBuilder();
        for (int i = 0; i < glob.length(); i++) {
            char c = glob.charAt(i);
            switch (c) {
                case '*' -> re.append("[^/]*");
                case '?' -> re.append("[^/]");
                case '\\' -> {
                    if (++i >= glob.length()) {
                        throw new IllegalArgumentException("syntax error in pattern");
                    }
                    re.append(Pattern.quote(String.valueOf(glob.charAt(i))));
                }
                case '[' -> {
                    int j = i + 1;
                    StringBuilder cls = new StringBuilder("[");
                    if (j < glob.length() && glob.charAt(j) == '^') {
                        cls.append('^');
                        j++;
                    }
                    boolean closed = false;
                    for (; j < glob.length(); j++) {
                        char k = glob.charAt(j);
                        if (k == ']' && cls.length() > 1 && !(cls.length() == 2 && cls.charAt(1) == '^')) {
                            closed = true;
                            break;
                        }
                        if (k == '\\' && j + 1 < glob.length()) {
                            j++;
                            k = glob.charAt(j);
                            cls.append('\\').append(k);
                        } else if (k == '-') {
                            cls.append('-');
                        } else if (Character.isLetterOrDigit(k)) {
                            cls.append(k);
                        } else {
                            cls.append('\\').append(k);
                        }
                    }
                    if (!closed) {
                        throw new IllegalArgumentException("syntax error in pattern");
                    }
                    re.append(cls).append(']');
                    i = j;
                }
                default -> re.append(Pattern.quote(String.valueOf(c)));
            }
        }
        return Pattern.compile(re.toString(), Pattern.DOTALL);
    }

    /** Go's filepath.Clean, lexically. */
    static String clean(String p) {
        if (p.isEmpty()) {
            return ".";
        }
        String c = Path.of(p).normalize().toString();
        return c.isEmpty() ? "." : c;
    }

    /** Go's filepath.Dir. */
    static String dirName(String p) {
        int i = p.lastIndexOf('/');
        return clean(p.substring(0, i + 1));
    }

    /** Go's filepath.Join of two elements. */
    static String join(String a, String b) {
        return clean(a.isEmpty() ? b : a + "/" + b);
    }

    /** Go's filepath.Rel for a target under base, with forward slashes. */
    static String rel(String base, String target) {
        String b = clean(base);
        String t = clean(target);
        if (b.equals(".")) {
            return t;
        }
        if (t.equals(b)) {
            return ".";
        }
        if (b.equals("/")) {
            return t.substring(1);
        }
        if (t.startsWith(b + "/")) {
            return t.substring(b.length() + 1);
        }
        throw new IllegalArgumentException("content key: " + target + " is not under " + base);
    }
}
