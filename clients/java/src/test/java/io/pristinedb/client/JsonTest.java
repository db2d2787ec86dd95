package io.pristinedb.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The client's JSON: what the daemon's answers hold reads back, and what is not JSON is refused. */
class JsonTest {
    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            {"a":1}                               | {"a":1}
            [1,-2.5,3e2,true,false,null]           | [1,-2.5,3e2,true,false,null]
            "tab\\tnl\\nquote\\"slash\\/bs\\\\"    | "tab\\tnl\\nquote\\"slash/bs\\\\"
            "\\u00e9\\ud83d\\ude00"                 | "é😀"
            "\\u0001"                              | "\\u0001"
            '  { "x" : [ ] , "y" : { } }  '       | {"x":[],"y":{}}
            """)
    void parsesAndWritesBack(String in, String out) {
        assertEquals(out, Json.parse(in).toString());
        assertEquals(Json.parse(in), Json.parse(Json.parse(in).toString()));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "{", "[1,]", "{\"a\"}", "{\"a\":1,}", "01", "-", "1.", "1e", "tru", "\"abc", "\"a\\x\"",
            "\"\\u12\"", "{} {}", "[1 2]", "{1:2}", "\"a\u0001\"", "nul"})
    void refusesWhatIsNotJson(String in) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Json.parse(in));
        assertTrue(e.getMessage().startsWith("JSON: "), e.getMessage());
    }

    @Test
    void refusesNestingThatWouldExhaustTheStack() {
        String deep = "[".repeat(100_000) + "]".repeat(100_000);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Json.parse(deep));
        assertTrue(e.getMessage().contains("nested deeper"), e.getMessage());
        Json ok = Json.parse("[".repeat(500) + "]".repeat(500));
        assertEquals(1, ok.size());
    }

    @Test
    void pathsNeverMeetNull() {
        Json j = Json.parse("{\"pool\":{\"states\":{\"ready\":3},\"size\":\"4\",\"up\":1.5,\"ok\":true,\"none\":null},\"list\":[\"a\",2,\"b\"]}");
        assertEquals(3, j.path("pool").path("states").path("ready").asInt());
        assertEquals(0, j.path("pool").path("states").path("leased").asInt());
        assertEquals(7, j.path("nothing").path("deeper").path(3).asInt(7));
        assertTrue(j.path("nothing").isMissing());
        assertEquals(4, j.path("pool").path("size").asInt(), "a number in a string");
        assertEquals(1, j.path("pool").path("up").asInt(), "truncated");
        assertEquals(1.5, j.path("pool").path("up").asDouble());
        assertTrue(j.path("pool").path("ok").asBoolean());
        assertTrue(j.path("pool").path("none").isNull());
        assertFalse(j.path("pool").hasNonNull("none"));
        assertTrue(j.path("pool").hasNonNull("ok"));
        assertEquals("dflt", j.path("pool").path("none").asText("dflt"));
        assertEquals(List.of("a", "b"), j.path("list").strings());
        assertEquals("b", j.path("list").path(2).asText());
        assertTrue(j.path("list").path(3).isMissing());
        assertEquals(List.of("pool", "list"), j.fieldNames());
        assertEquals("", Json.missing().toString());
    }

    @Test
    void writesRequestBodies() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("s", "a\"b\n");
        m.put("n", 3);
        m.put("d", 2.0);
        m.put("f", 0.25);
        m.put("l", List.of(true, "x"));
        m.put("z", null);
        assertEquals("{\"s\":\"a\\\"b\\n\",\"n\":3,\"d\":2,\"f\":0.25,\"l\":[true,\"x\"],\"z\":null}", Json.write(m));
        assertThrows(IllegalArgumentException.class, () -> Json.write(Double.NaN));
        assertThrows(IllegalArgumentException.class, () -> Json.write(new Object()));
    }

    @Test
    void requestsLeaveOutWhatIsNotSet() {
        assertEquals("{\"template\":\"app\",\"holder\":\"t\"}", Json.write(LeaseRequest.of("app", "t").body()));
        assertEquals("{\"template\":\"app\",\"wait_seconds\":0.5,\"pid\":42,\"min_size\":3}",
                Json.write(new LeaseRequest("app", null, 0, 0.5, 42, 3).body()));
        assertEquals("{\"name\":\"n\",\"key\":\"k\",\"runs_code\":true,\"key_files\":2}",
                Json.write(TemplateRequest.of("n", "k").withKeyFiles(2, false).body()));
    }

    @Test
    void answersReadIntoRecords() {
        Lease l = Lease.from(Json.parse("{\"id\":\"L1\",\"template\":\"app\",\"slot\":2,\"port\":3307,\"user\":\"u\",\"password\":\"p\","
                + "\"env\":[\"A=1\",\"B=2\"],\"kept\":true,\"pid\":99,\"clone\":\"c7\",\"ca\":\"\",\"unknown\":{\"x\":[1]}}"));
        assertEquals("L1", l.id());
        assertEquals(2, l.slot());
        assertEquals(3307, l.port());
        assertEquals(List.of("A=1", "B=2"), l.env());
        assertTrue(l.kept());
        assertEquals(99, l.pid());
        assertEquals("c7", l.cloneId());
        assertEquals("", l.ca());
        assertNull(l.socket(), "a field the answer did not carry");
        TemplateAnswer a = TemplateAnswer.from(Json.parse("{\"status\":\"ready\",\"hash\":\"h\",\"template\":{\"name\":\"app\"}}"));
        assertEquals(TemplateAnswer.READY, a.status());
        assertEquals("app", a.template().path("name").asText());
        ForkAnswer f = ForkAnswer.from(Json.parse("{\"template\":{\"hash\":\"fh\"},\"built\":true,\"seconds\":0.25}"));
        assertEquals("fh", f.hash());
        assertTrue(f.built());
        assertEquals(0.25, f.seconds());
    }
}
