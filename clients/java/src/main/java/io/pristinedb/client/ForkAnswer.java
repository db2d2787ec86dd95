package io.pristinedb.client;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;

/**
 * The daemon's answer to a fork ({@link PristineClient#fork}): the new
 * template ({@code name}, {@code hash}, {@code parent}, {@code parent_name},
 * ...), whether it was made now ({@code built} false: a fork with the same
 * key was there already) and how long the fork took in the daemon.
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record ForkAnswer(
        @JsonProperty("template") JsonNode template,
        @JsonProperty("built") boolean built,
        @JsonProperty("seconds") double seconds) {

    /** The fork's hash, which {@link PristineClient#ensurePool} takes. */
    public String hash() {
        return template.path("hash").asText();
    }
}
