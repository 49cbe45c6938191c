package io.kvbridge.backend.nixl.ffm;

/** Which generation of the C API a library implements, told apart by the symbols it exports. */
public enum NixlApiLevel
{
    /** NIXL 0.10.1 through 1.4: 96 functions; nearly every failure reads {@code -2}. */
    V1_4("0.10.1..1.4 (96 functions; most failures read -2)"),
    /** After 1.4.0: memory views added, and {@code NOT_FOUND=-6} and {@code INVALID_PARAM=-1} reported. */
    HEAD("after 1.4.0 (memory views present; NOT_FOUND=-6 reported)");

    private final String description;

    NixlApiLevel(String description)
    {
        this.description = description;
    }

    /** @return a short description for probe details. */
    public String description()
    {
        return description;
    }
}
