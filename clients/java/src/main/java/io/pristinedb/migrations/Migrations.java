package io.pristinedb.migrations;

import io.pristinedb.client.PristineException;
import io.pristinedb.client.TemplateBuilder;
import java.io.IOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Template builders that run an application's own migrations (Flyway or
 * Liquibase) once into the template, and the files that key them: the
 * migration files a classpath or filesystem location holds.
 */
public final class Migrations {
    private Migrations() {
    }

    /** Spring Boot's default Flyway location. */
    public static final String FLYWAY_DEFAULT = "classpath:db/migration";
    /** Spring Boot's default Liquibase change log. */
    public static final String LIQUIBASE_DEFAULT = "classpath:db/changelog/db.changelog-master.yaml";

    /** Whether Flyway is on the classpath. */
    public static boolean flywayPresent() {
        return present("org.flywaydb.core.Flyway");
    }

    /** Whether Liquibase is on the classpath. */
    public static boolean liquibasePresent() {
        return present("liquibase.Liquibase");
    }

    private static boolean present(String cls) {
        try {
            Class.forName(cls, false, loader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }

    private static ClassLoader loader() {
        ClassLoader cl = Thread.currentThread().getContextClassLoader();
        return cl != null ? cl : Migrations.class.getClassLoader();
    }

    /** Runs Flyway's migrate with locations (Flyway's syntax: classpath:..., filesystem:...). */
    public static TemplateBuilder flyway(String... locations) {
        if (!flywayPresent()) {
            throw new PristineException("Flyway is not on the test classpath: add org.flywaydb:flyway-core (and flyway-mysql) as a dependency, or build the template another way");
        }
        String[] locs = locations.length == 0 ? new String[] {FLYWAY_DEFAULT} : locations.clone();
        return conn -> FlywayRun.migrate(conn, locs);
    }

    /** Runs Liquibase's update with changeLog (a classpath resource, optionally prefixed classpath:). */
    public static TemplateBuilder liquibase(String changeLog) {
        if (!liquibasePresent()) {
            throw new PristineException("Liquibase is not on the test classpath: add org.liquibase:liquibase-core as a dependency, or build the template another way");
        }
        String log = stripClasspath(changeLog);
        return conn -> LiquibaseRun.update(conn, log);
    }

    /*
     * Flyway's and Liquibase's calls live in classes of their own: the JVM
     * verifies a class's code when it loads it and loads the types that code
     * passes around, so calls in Migrations itself made every use of it need
     * both on the classpath (an app with Flyway and no Liquibase got
     * NoClassDefFoundError: liquibase/database/DatabaseConnection).
     */
    private static final class FlywayRun {
        static void migrate(io.pristinedb.client.DatabaseConnection conn, String[] locations) {
            org.flywaydb.core.Flyway.configure(loader())
                    .dataSource(conn.jdbcUrl(), conn.user(), conn.password())
                    .locations(locations)
                    .load()
                    .migrate();
        }
    }

    private static final class LiquibaseRun {
        static void update(io.pristinedb.client.DatabaseConnection conn, String log) throws Exception {
            try (Connection c = conn.connect()) {
                liquibase.database.Database db = liquibase.database.DatabaseFactory.getInstance()
                        .findCorrectDatabaseImplementation(new liquibase.database.jvm.JdbcConnection(c));
                @SuppressWarnings("deprecation")
                liquibase.Liquibase lb = new liquibase.Liquibase(log, new liquibase.resource.ClassLoaderResourceAccessor(loader()), db);
                lb.update(new liquibase.Contexts(), new liquibase.LabelExpression());
            }
        }
    }

    /** The version of Flyway on the classpath, for the key. */
    public static String flywayVersion() {
        return "flyway " + version("org.flywaydb.core.Flyway");
    }

    /** The version of Liquibase on the classpath, for the key. */
    public static String liquibaseVersion() {
        return "liquibase " + version("liquibase.Liquibase");
    }

    private static String version(String cls) {
        try {
            Package p = Class.forName(cls, false, loader()).getPackage();
            return p != null && p.getImplementationVersion() != null ? p.getImplementationVersion() : "?";
        } catch (ClassNotFoundException e) {
            return "absent";
        }
    }

    /**
     * The files a Flyway location holds, as content-key patterns: a
     * {@code filesystem:} directory as it is, a {@code classpath:} location
     * as the directories (or jars) that hold it on the classpath.
     */
    public static List<String> locationFiles(String location) {
        if (location.startsWith("filesystem:")) {
            String p = location.substring("filesystem:".length());
            if (!Files.exists(Path.of(p))) {
                throw new PristineException("migrations: " + location + " does not exist (relative to " + Path.of("").toAbsolutePath() + ")");
            }
            return List.of(p);
        }
        String res = stripClasspath(location);
        while (res.startsWith("/")) {
            res = res.substring(1);
        }
        List<String> out = new ArrayList<>();
        try {
            for (URL u : Collections.list(loader().getResources(res))) {
                out.add(local(u, location));
            }
        } catch (IOException e) {
            throw new PristineException("migrations: read " + location + " on the classpath: " + e, e);
        }
        if (out.isEmpty()) {
            throw new PristineException("migrations: " + location + " is not on the test classpath: name where the migrations are (Flyway locations, a Liquibase change log)");
        }
        return out;
    }

    /** The files that key a Liquibase change log: the directory it is in (its includes are usually there). */
    public static List<String> changeLogFiles(String changeLog) {
        String res = stripClasspath(changeLog);
        int i = res.lastIndexOf('/');
        return locationFiles("classpath:" + (i > 0 ? res.substring(0, i) : res));
    }

    private static String local(URL u, String location) {
        try {
            if ("file".equals(u.getProtocol())) {
                return Path.of(u.toURI()).toString();
            }
            if ("jar".equals(u.getProtocol())) {
                String s = u.getPath(); // file:/x.jar!/db/migration
                int bang = s.indexOf("!/");
                return Path.of(new java.net.URI(s.substring(0, bang))).toString();
            }
        } catch (URISyntaxException | IllegalArgumentException e) {
            throw new PristineException("migrations: " + location + " at " + u + ": " + e, e);
        }
        throw new PristineException("migrations: " + location + " is at " + u + ", which is not a file or a jar: name the files that key the template");
    }

    private static String stripClasspath(String s) {
        return s.startsWith("classpath:") ? s.substring("classpath:".length()) : s;
    }
}
