package io.pristinedb.migrations;

import io.pristinedb.client.DatabaseConnection;
import io.pristinedb.client.PristineException;
import io.pristinedb.client.TemplateAnswer;
import io.pristinedb.client.TemplateBuilder;
import io.pristinedb.client.TemplateSpec;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Turns what an annotation says (files, a command, Flyway locations, a
 * Liquibase change log, a builder class) into a {@link TemplateSpec}: the
 * builder and the files and strings that key it. Shared by the JUnit 5
 * extension and the Spring support.
 */
public final class TemplateSpecs {
    private TemplateSpecs() {
    }

    /**
     * The spec of a template. With nothing to build it given and
     * autodetect, Spring Boot's defaults are used: Flyway's
     * {@code db/migration}, else Liquibase's {@code db/changelog/db.changelog-master.yaml}.
     */
    public static TemplateSpec of(String template, String[] files, String migrate, String[] flyway, String liquibase,
                                  Class<? extends TemplateBuilder> builderClass, String database, int poolSize,
                                  String cache, boolean autodetect) {
        return of(template, files, migrate, flyway, liquibase, builderClass, database, poolSize, cache, autodetect, false);
    }

    /**
     * The spec of a template, as {@link #of(String, String[], String, String[], String, Class, String, int, String, boolean)};
     * allowStale accepts a migrate command or builder that no files key
     * (refused otherwise: its template would go stale when they change).
     */
    public static TemplateSpec of(String template, String[] files, String migrate, String[] flyway, String liquibase,
                                  Class<? extends TemplateBuilder> builderClass, String database, int poolSize,
                                  String cache, boolean autodetect, boolean allowStale) {
        List<String> patterns = new ArrayList<>(Arrays.asList(files));
        List<String> extra = new ArrayList<>();
        TemplateBuilder builder = null;
        if (builderClass != null && builderClass != TemplateBuilder.class) {
            try {
                builder = builderClass.getDeclaredConstructor().newInstance();
            } catch (ReflectiveOperationException e) {
                throw new PristineException("template " + template + ": cannot make a " + builderClass.getName()
                        + ": give it a public no-argument constructor (" + e + ")", e);
            }
            extra.add("builder " + builderClass.getName());
        } else if (migrate != null && !migrate.isEmpty()) {
            builder = command(migrate);
            extra.add(migrate);
        } else if (flyway != null && flyway.length > 0) {
            builder = flyway(flyway, patterns, extra);
        } else if (liquibase != null && !liquibase.isEmpty()) {
            builder = liquibase(liquibase, patterns, extra);
        } else if (autodetect) {
            ClassLoader cl = Thread.currentThread().getContextClassLoader();
            if (Migrations.flywayPresent() && cl.getResource("db/migration") != null) {
                builder = flyway(new String[] {Migrations.FLYWAY_DEFAULT}, patterns, extra);
            } else if (Migrations.liquibasePresent() && cl.getResource("db/changelog/db.changelog-master.yaml") != null) {
                builder = liquibase(Migrations.LIQUIBASE_DEFAULT, patterns, extra);
            }
        }
        if (patterns.isEmpty() && extra.isEmpty()) {
            throw new PristineException("template " + template + ": nothing keys it: name the files that define it (files = ...), "
                    + "or the migrations that build it (flyway = ..., liquibase = ..., migrate = ...)");
        }
        return new TemplateSpec(template, patterns, extra, builder, database, poolSize, cache, allowStale);
    }

    private static TemplateBuilder flyway(String[] locations, List<String> patterns, List<String> extra) {
        for (String l : locations) {
            patterns.addAll(Migrations.locationFiles(l));
        }
        extra.add(Migrations.flywayVersion());
        return Migrations.flyway(locations);
    }

    private static TemplateBuilder liquibase(String changeLog, List<String> patterns, List<String> extra) {
        patterns.addAll(Migrations.changeLogFiles(changeLog));
        extra.add(Migrations.liquibaseVersion() + " " + changeLog);
        return Migrations.liquibase(changeLog);
    }

    /**
     * A builder running a shell command that sees the template server in
     * MYSQL_HOST, MYSQL_PORT, MYSQL_TCP_PORT, MYSQL_UNIX_PORT, MYSQL_USER,
     * MYSQL_PWD, MYSQL_DATABASE and DATABASE_URL (and the daemon's env).
     */
    public static TemplateBuilder command(String command) {
        return conn -> {
            ProcessBuilder pb = new ProcessBuilder("sh", "-c", command).redirectErrorStream(true);
            Map<String, String> env = pb.environment();
            env.putAll(environment(conn));
            Process p = pb.start();
            byte[] out = p.getInputStream().readAllBytes();
            int code;
            try {
                code = p.waitFor();
            } catch (InterruptedException e) {
                p.destroyForcibly();
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
            if (code != 0) {
                String text = new String(out, StandardCharsets.UTF_8).trim();
                if (text.length() > 4000) {
                    text = "..." + text.substring(text.length() - 4000);
                }
                throw new IOException("`" + command + "` exited with status " + code + (text.isEmpty() ? "" : ": " + text));
            }
        };
    }

    /** The environment a migration command sees for conn. */
    public static Map<String, String> environment(DatabaseConnection conn) {
        Map<String, String> env = new java.util.TreeMap<>();
        env.put("MYSQL_HOST", conn.host());
        env.put("MYSQL_PORT", String.valueOf(conn.port()));
        env.put("MYSQL_TCP_PORT", String.valueOf(conn.port()));
        env.put("MYSQL_USER", conn.user());
        env.put("MYSQL_PWD", conn.password());
        env.put("MYSQL_DATABASE", conn.database());
        if (conn instanceof TemplateAnswer a) {
            if (a.socket() != null) {
                env.put("MYSQL_UNIX_PORT", a.socket());
            }
            if (a.url() != null) {
                env.put("DATABASE_URL", a.url());
            }
            if (a.env() != null) {
                for (String kv : a.env()) {
                    int i = kv.indexOf('=');
                    if (i > 0) {
                        env.put(kv.substring(0, i), kv.substring(i + 1));
                    }
                }
            }
        }
        return env;
    }
}
