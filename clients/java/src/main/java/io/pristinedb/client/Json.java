package io.pristinedb.client;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A JSON value of the daemon's API (RFC 8259): an object, an array, a
 * string, a number, true, false or null, read with {@link #parse}; or
 * missing, what {@link #path} answers for a member or element that is not
 * there, so a chain of reads never meets a null. {@link #write} encodes a
 * request body.
 *
 * <p>The client reads and writes JSON with this class rather than a JSON
 * library: a test JVM pays for every class it loads and every method the
 * JIT compiles while its first tests run, and the API's documents are a few
 * flat objects. Immutable and thread-safe.
 */
public final class Json implements Iterable<Json> {
    private enum Kind { OBJECT, ARRAY, STRING, NUMBER, TRUE, FALSE, NULL, MISSING }

    private static final Json MISSING = new Json(Kind.MISSING, null);
    private static final Json NULL = new Json(Kind.NULL, null);
    private static final Json TRUE = new Json(Kind.TRUE, null);
    private static final Json FALSE = new Json(Kind.FALSE, null);

    private final Kind kind;
    // A Map<String, Json> (object), List<Json> (array), String (string and
    // number: the number's text as it came), or null.
    private final Object value;

    private Json(Kind kind, Object value) {
        this.kind = kind;
        this.value = value;
    }

    /** The missing value: what {@link #path} answers for what is not there. */
    static Json missing() {
        return MISSING;
    }

    /** Parses one JSON document; anything after it but white space is an error. */
    public static Json parse(String text) {
        Parser p = new Parser(text);
        Json v = p.value();
        p.space();
        if (p.i < text.length()) {
            throw p.error("more after the value");
        }
        return v;
    }

    /** Parses one JSON document in UTF-8. */
    public static Json parse(byte[] utf8) {
        return parse(new String(utf8, StandardCharsets.UTF_8));
    }

    /** The member name of an object; missing when this is not an object or has no such member. */
    public Json path(String name) {
        if (kind != Kind.OBJECT) {
            return MISSING;
        }
        Json v = object().get(name);
        return v == null ? MISSING : v;
    }

    /** Element i of an array; missing when this is not an array or i is out of its range. */
    public Json path(int i) {
        if (kind != Kind.ARRAY || i < 0 || i >= array().size()) {
            return MISSING;
        }
        return array().get(i);
    }

    /** Whether this is an object with a member name that is not null. */
    public boolean hasNonNull(String name) {
        Json v = path(name);
        return !v.isMissing() && !v.isNull();
    }

    /** Whether this value is missing (see {@link #path}). */
    public boolean isMissing() {
        return kind == Kind.MISSING;
    }

    /** Whether this value is JSON's null. */
    public boolean isNull() {
        return kind == Kind.NULL;
    }

    /** Whether this value is an object. */
    public boolean isObject() {
        return kind == Kind.OBJECT;
    }

    /** Whether this value is an array. */
    public boolean isArray() {
        return kind == Kind.ARRAY;
    }

    /** How many members (object) or elements (array); 0 for any other value. */
    public int size() {
        return switch (kind) {
            case OBJECT -> object().size();
            case ARRAY -> array().size();
            default -> 0;
        };
    }

    /** An object's member names, in the document's order; empty for any other value. */
    public List<String> fieldNames() {
        return kind == Kind.OBJECT ? List.copyOf(object().keySet()) : List.of();
    }

    /** An array's elements, or an object's member values; nothing for any other value. */
    @Override
    public Iterator<Json> iterator() {
        return switch (kind) {
            case OBJECT -> object().values().iterator();
            case ARRAY -> array().iterator();
            default -> Collections.emptyIterator();
        };
    }

    /** A string's value, a number's or a boolean's text; "" for null, missing, objects and arrays. */
    public String asText() {
        return asText("");
    }

    /** As {@link #asText()}, with def for null and missing. */
    public String asText(String def) {
        return switch (kind) {
            case STRING, NUMBER -> (String) value;
            case TRUE -> "true";
            case FALSE -> "false";
            case NULL, MISSING -> def;
            default -> "";
        };
    }

    /** A string's value; null for anything else (a field the answer did not carry). */
    String string() {
        return kind == Kind.STRING ? (String) value : null;
    }

    /** A number (or a string of one) as a long, truncated; def for anything else. */
    public long asLong(long def) {
        if (kind != Kind.NUMBER && kind != Kind.STRING) {
            return def;
        }
        String s = (String) value;
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            try {
                return (long) Double.parseDouble(s);
            } catch (NumberFormatException e2) {
                return def;
            }
        }
    }

    /** As {@link #asLong(long)} with 0. */
    public long asLong() {
        return asLong(0);
    }

    /** A number as an int, truncated; def for anything else. */
    public int asInt(int def) {
        return (int) asLong(def);
    }

    /** As {@link #asInt(int)} with 0. */
    public int asInt() {
        return asInt(0);
    }

    /** A number (or a string of one) as a double; def for anything else. */
    public double asDouble(double def) {
        if (kind != Kind.NUMBER && kind != Kind.STRING) {
            return def;
        }
        try {
            return Double.parseDouble((String) value);
        } catch (NumberFormatException e) {
            return def;
        }
    }

    /** As {@link #asDouble(double)} with 0. */
    public double asDouble() {
        return asDouble(0);
    }

    /** true or false; def for anything else. */
    public boolean asBoolean(boolean def) {
        return switch (kind) {
            case TRUE -> true;
            case FALSE -> false;
            default -> def;
        };
    }

    /** As {@link #asBoolean(boolean)} with false. */
    public boolean asBoolean() {
        return asBoolean(false);
    }

    /** An array's strings (elements of other kinds are left out); null for anything else (a field the answer did not carry). */
    List<String> strings() {
        if (kind != Kind.ARRAY) {
            return null;
        }
        List<String> out = new ArrayList<>(array().size());
        for (Json v : array()) {
            if (v.kind == Kind.STRING) {
                out.add((String) v.value);
            }
        }
        return List.copyOf(out);
    }

    @SuppressWarnings("unchecked")
    private Map<String, Json> object() {
        return (Map<String, Json>) value;
    }

    @SuppressWarnings("unchecked")
    private List<Json> array() {
        return (List<Json>) value;
    }

    /** This value as JSON text; "" when it is missing. */
    @Override
    public String toString() {
        if (kind == Kind.MISSING) {
            return "";
        }
        StringBuilder sb = new StringBuilder();
        encode(sb, this);
        return sb.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Json j && kind == j.kind && java.util.Objects.equals(value, j.value);
    }

    @Override
    public int hashCode() {
        return kind.hashCode() * 31 + java.util.Objects.hashCode(value);
    }

    /**
     * Encodes v as JSON: a {@link Map} (its keys as strings, in its order)
     * as an object, a {@link List} as an array, a {@link CharSequence} as
     * a string, a {@link Number} (finite) or {@link Boolean} as itself,
     * null as null, a {@link Json} as the value it holds.
     */
    public static String write(Object v) {
        StringBuilder sb = new StringBuilder();
        encode(sb, v);
        return sb.toString();
    }

    /**
     * Puts name and v into a request body m when v is set: not null, not
     * "", not 0 and not false (a field the daemon then takes its default of).
     */
    static void putSet(Map<String, Object> m, String name, Object v) {
        boolean unset = v == null
                || (v instanceof CharSequence c && c.length() == 0)
                || (v instanceof Number n && n.doubleValue() == 0)
                || Boolean.FALSE.equals(v);
        if (!unset) {
            m.put(name, v);
        }
    }

    private static void encode(StringBuilder sb, Object v) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof Json j) {
            switch (j.kind) {
                case OBJECT -> encode(sb, j.object());
                case ARRAY -> encode(sb, j.array());
                case STRING -> quote(sb, (String) j.value);
                case NUMBER -> sb.append((String) j.value);
                case TRUE -> sb.append("true");
                case FALSE -> sb.append("false");
                default -> sb.append("null");
            }
        } else if (v instanceof Map<?, ?> m) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                quote(sb, String.valueOf(e.getKey()));
                sb.append(':');
                encode(sb, e.getValue());
            }
            sb.append('}');
        } else if (v instanceof Iterable<?> it) {
            sb.append('[');
            boolean first = true;
            for (Object e : it) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                encode(sb, e);
            }
            sb.append(']');
        } else if (v instanceof CharSequence s) {
            quote(sb, s.toString());
        } else if (v instanceof Boolean b) {
            sb.append(b.booleanValue());
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                throw new IllegalArgumentException("JSON has no " + d);
            }
            sb.append(d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d));
        } else if (v instanceof Number n) {
            sb.append(n);
        } else {
            throw new IllegalArgumentException("no JSON encoding for " + v.getClass().getName());
        }
    }

    private static void quote(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                case '\b' -> sb.append("\\b");
                case '\f' -> sb.append("\\f");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }

    /** A recursive descent over one document; nesting is bounded so a hostile answer cannot exhaust the stack. */
    private static final class Parser {
        private static final int MAX_DEPTH = 512;
        private final String s;
        private int i;
        private int depth;

        Parser(String s) {
            this.s = s;
        }

        IllegalArgumentException error(String what) {
            return new IllegalArgumentException("JSON: " + what + " at offset " + i);
        }

        void space() {
            while (i < s.length()) {
                char c = s.charAt(i);
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                    return;
                }
                i++;
            }
        }

        Json value() {
            space();
            if (i >= s.length()) {
                throw error("a value expected");
            }
            char c = s.charAt(i);
            return switch (c) {
                case '{' -> object();
                case '[' -> array();
                case '"' -> new Json(Kind.STRING, string());
                case 't' -> word("true", TRUE);
                case 'f' -> word("false", FALSE);
                case 'n' -> word("null", NULL);
                default -> {
                    if (c == '-' || (c >= '0' && c <= '9')) {
                        yield number();
                    }
                    throw error("unexpected '" + c + "'");
                }
            };
        }

        private Json word(String w, Json v) {
            if (!s.startsWith(w, i)) {
                throw error("unexpected word");
            }
            i += w.length();
            return v;
        }

        private void enter() {
            if (++depth > MAX_DEPTH) {
                throw error("nested deeper than " + MAX_DEPTH);
            }
        }

        private Json object() {
            enter();
            i++; // {
            Map<String, Json> m = new LinkedHashMap<>();
            space();
            if (i < s.length() && s.charAt(i) == '}') {
                i++;
                depth--;
                return new Json(Kind.OBJECT, Collections.unmodifiableMap(m));
            }
            while (true) {
                space();
                if (i >= s.length() || s.charAt(i) != '"') {
                    throw error("a member name expected");
                }
                String k = string();
                space();
                if (i >= s.length() || s.charAt(i) != ':') {
                    throw error("':' expected");
                }
                i++;
                m.put(k, value());
                space();
                if (i >= s.length()) {
                    throw error("'}' expected");
                }
                char c = s.charAt(i++);
                if (c == '}') {
                    depth--;
                    return new Json(Kind.OBJECT, Collections.unmodifiableMap(m));
                }
                if (c != ',') {
                    i--;
                    throw error("',' or '}' expected");
                }
            }
        }

        private Json array() {
            enter();
            i++; // [
            List<Json> l = new ArrayList<>();
            space();
            if (i < s.length() && s.charAt(i) == ']') {
                i++;
                depth--;
                return new Json(Kind.ARRAY, Collections.unmodifiableList(l));
            }
            while (true) {
                l.add(value());
                space();
                if (i >= s.length()) {
                    throw error("']' expected");
                }
                char c = s.charAt(i++);
                if (c == ']') {
                    depth--;
                    return new Json(Kind.ARRAY, Collections.unmodifiableList(l));
                }
                if (c != ',') {
                    i--;
                    throw error("',' or ']' expected");
                }
            }
        }

        private String string() {
            i++; // "
            StringBuilder sb = null;
            int start = i;
            while (true) {
                if (i >= s.length()) {
                    throw error("unterminated string");
                }
                char c = s.charAt(i);
                if (c == '"') {
                    String out = sb == null ? s.substring(start, i) : sb.append(s, start, i).toString();
                    i++;
                    return out;
                }
                if (c < 0x20) {
                    throw error("control character in a string");
                }
                if (c != '\\') {
                    i++;
                    continue;
                }
                if (sb == null) {
                    sb = new StringBuilder();
                }
                sb.append(s, start, i);
                if (++i >= s.length()) {
                    throw error("unterminated escape");
                }
                char e = s.charAt(i++);
                switch (e) {
                    case '"', '\\', '/' -> sb.append(e);
                    case 'b' -> sb.append('\b');
                    case 'f' -> sb.append('\f');
                    case 'n' -> sb.append('\n');
                    case 'r' -> sb.append('\r');
                    case 't' -> sb.append('\t');
                    case 'u' -> {
                        if (i + 4 > s.length()) {
                            throw error("short \\u escape");
                        }
                        try {
                            sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        } catch (NumberFormatException x) {
                            throw error("bad \\u escape");
                        }
                        i += 4;
                    }
                    default -> throw error("bad escape \\" + e);
                }
                start = i;
            }
        }

        private Json number() {
            int start = i;
            if (s.charAt(i) == '-') {
                i++;
            }
            int digits = digits();
            if (digits == 0) {
                throw error("a digit expected");
            }
            if (digits > 1 && s.charAt(i - digits) == '0') {
                throw error("a number with a leading zero");
            }
            if (i < s.length() && s.charAt(i) == '.') {
                i++;
                if (digits() == 0) {
                    throw error("a digit expected after '.'");
                }
            }
            if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
                i++;
                if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-')) {
                    i++;
                }
                if (digits() == 0) {
                    throw error("a digit expected in the exponent");
                }
            }
            return new Json(Kind.NUMBER, s.substring(start, i));
        }

        private int digits() {
            int n = 0;
            while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
                i++;
                n++;
            }
            return n;
        }
    }
}
