package io.kvbridge.backend.nixl.ffm;

import static java.util.Objects.requireNonNull;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * What loading a {@code libnixl_capi.so} showed.
 *
 * @param path the file.
 * @param problems why it cannot be used, each with its fix; empty when it loaded with every
 *     required function.
 * @param stub what {@code nixl_capi_is_stub()} returned: true for stubs and test fakes, never for NIXL.
 * @param fakeIdentity the identity string of a test fake ({@code nixl_fake_info()}), if it is one.
 * @param apiLevel the C API generation, when the library loaded.
 */
public record NixlLibraryReport(Path path, List<String> problems, boolean stub, Optional<String> fakeIdentity, Optional<NixlApiLevel> apiLevel)
{
    /** Validates and copies. */
    public NixlLibraryReport
    {
        requireNonNull(path, "path is null");
        problems = List.copyOf(requireNonNull(problems, "problems is null"));
        requireNonNull(fakeIdentity, "fakeIdentity is null");
        requireNonNull(apiLevel, "apiLevel is null");
    }

    /** @return true when the library loaded with every required function. */
    public boolean loaded()
    {
        return problems.isEmpty();
    }
}
