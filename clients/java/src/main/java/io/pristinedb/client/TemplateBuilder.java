package io.pristinedb.client;

/**
 * Runs a template's migrations and fixtures against the template server
 * {@code conn} names (once per content key, across processes). An exception
 * aborts the build; the next caller tries again.
 */
@FunctionalInterface
public interface TemplateBuilder {
    void build(DatabaseConnection conn) throws Exception;
}
