package io.pristinedb.spring;

import io.pristinedb.client.PristineException;
import io.pristinedb.client.TemplateBuilder;
import io.pristinedb.client.TemplateSpec;
import io.pristinedb.migrations.Migrations;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.springframework.core.io.DefaultResourceLoader;
import org.springframework.core.io.Resource;
import org.springframework.core.io.ResourceLoader;
import org.springframework.jdbc.datasource.init.ResourceDatabasePopulator;

/**
 * A template built from Spring's {@code spring.sql.init} scripts
 * ({@code schema.sql}, {@code data.sql}): the client runs them into the
 * template over JDBC, as Spring's startup would (Spring's
 * ResourceDatabasePopulator: {@code ;} separated, UTF-8, stop at the first
 * error), keys the template by their contents, and turns the app's own run
 * of them off for the test context ({@code spring.sql.init.mode=never}):
 * every test's database already has what they write.
 */
final class SqlInit {
    /** Spring's default scripts, run in this order when they exist. */
    static final List<String> DEFAULTS = List.of("classpath:schema.sql", "classpath:data.sql");

    private SqlInit() {
    }

    /**
     * The scripts that build a's template: {@code sqlInit} when named; else,
     * when nothing else builds it (no builder, migrate, Flyway or Liquibase
     * named or found), Spring's defaults that are on the classpath; else none.
     */
    static List<String> scripts(AutoConfigurePristineDatabase a) {
        if (a.sqlInit().length > 0) {
            return Arrays.stream(a.sqlInit()).map(l -> l.replaceFirst("^classpath\\*:", "classpath:")).toList();
        }
        boolean named = a.builder() != TemplateBuilder.class || !a.migrate().isEmpty() || a.flyway().length > 0
                || !a.liquibase().isEmpty();
        ClassLoader cl = Thread.currentThread().getContextClassLoader();
        boolean found = (Migrations.flywayPresent() && cl.getResource("db/migration") != null)
                || (Migrations.liquibasePresent() && cl.getResource("db/changelog/db.changelog-master.yaml") != null);
        if (named || found) {
            return List.of();
        }
        ResourceLoader rl = new DefaultResourceLoader(cl);
        return DEFAULTS.stream().filter(s -> rl.getResource(s).exists()).toList();
    }

    /** The spec of a template built by scripts, keyed by their contents and a's files. */
    static TemplateSpec spec(AutoConfigurePristineDatabase a, List<String> scripts) {
        List<String> patterns = new ArrayList<>(Arrays.asList(a.files()));
        for (String s : scripts) {
            patterns.add(file(a.template(), s));
        }
        List<String> extra = List.of("spring.sql.init " + String.join(" ", scripts));
        return new TemplateSpec(a.template(), patterns, extra, builder(scripts), a.database(), a.poolSize(), a.cache(),
                a.allowStale());
    }

    /** The local file of a script location (classpath:, file: or a path), for the key. */
    static String file(String template, String location) {
        if (location.startsWith("classpath:")) {
            return Migrations.locationFiles(location).get(0);
        }
        String p = location.startsWith("file:") ? location.substring("file:".length()) : location;
        if (!Files.isRegularFile(Path.of(p))) {
            throw new PristineException("template " + template + ": its spring.sql.init script " + location
                    + " does not exist (relative to " + Path.of("").toAbsolutePath() + ")");
        }
        return p;
    }

    /** Runs the scripts, in order, on the template's database. */
    static TemplateBuilder builder(List<String> scripts) {
        return conn -> {
            ResourceLoader rl = new DefaultResourceLoader(Thread.currentThread().getContextClassLoader());
            ResourceDatabasePopulator p = new ResourceDatabasePopulator();
            p.setSqlScriptEncoding("UTF-8");
            for (String s : scripts) {
                Resource r = rl.getResource(s.startsWith("classpath:") || s.startsWith("file:") ? s : "file:" + s);
                p.addScript(r);
            }
            try (Connection c = conn.connect()) {
                p.populate(c);
            }
        };
    }
}
