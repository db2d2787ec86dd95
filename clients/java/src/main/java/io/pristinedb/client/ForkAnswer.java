package io.pristinedb.client;


/**
 * The daemon's answer to a fork ({@link PristineClient#fork}): the new
 * template ({@code name}, {@code hash}, {@code parent}, {@code parent_name},
 * ...), whether it was made now ({@code built} false: a fork with the same
 * key was there already) and how long the fork took in the daemon.
 */
public record ForkAnswer(
        Json template,
        boolean built,
        double seconds) {

    /** The answer of the daemon's document j. */
    static ForkAnswer from(Json j) {
        return new ForkAnswer(j.path("template"), j.path("built").asBoolean(), j.path("seconds").asDouble());
    }

    /** The fork's hash, which {@link PristineClient#ensurePool} takes. */
    public String hash() {
        return template.path("hash").asText();
    }
}
