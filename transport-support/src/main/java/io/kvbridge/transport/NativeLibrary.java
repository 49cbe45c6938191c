package io.kvbridge.transport;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * How every native transport finds, loads and binds its library, the same way for each:
 *
 * <ul>
 *   <li>{@code -Dkvbridge.<transport>.library=PATH}: the library file, or a directory holding it
 *       (and its sibling libraries); without it, the dynamic linker's search path;</li>
 *   <li>{@code -Dkvbridge.<transport>.enabled=false}: the kill switch, which makes the probe report
 *       the transport unavailable without loading anything;</li>
 *   <li>one {@link MethodHandle} per C function, bound through a {@link Binder} that collects every
 *       missing symbol into one message instead of stopping at the first;</li>
 *   <li>{@link #failure}: a native status as a typed error naming the function.</li>
 * </ul>
 *
 * <p>Bindings pass pointers as {@code JAVA_LONG} on hot paths: on the 64-bit Linux ABIs kvbridge
 * supports a pointer travels exactly like a 64-bit integer, and a {@code long} needs no segment.
 *
 * <p>Threads: the static methods any; a {@link Binder} belongs to the thread that binds, normally
 * the one initialising the binding class.
 */
public final class NativeLibrary
{
    private NativeLibrary()
    {
    }

    /**
     * Returns what {@code --enable-native-access} must name for a transport: {@code ALL-UNNAMED} on
     * the class path; on the module path this toolkit's module, which loads the libraries, and the
     * transport's, which binds them.
     *
     * @param transportClass any class of the transport.
     * @return the flag's value, such as {@code io.kvbridge.transport,io.kvbridge.backend.ucx}.
     */
    public static String nativeAccessFlag(Class<?> transportClass)
    {
        Module transport = transportClass.getModule();
        if (!transport.isNamed()) {
            return "ALL-UNNAMED";
        }
        Module toolkit = NativeLibrary.class.getModule();
        return toolkit.isNamed() && toolkit != transport ? toolkit.getName() + "," + transport.getName() : transport.getName();
    }

    /**
     * Words a probe's {@code native-access} detail the same for every transport: whether the
     * transport's module may call restricted methods, and else the flag that silences the JDK's warning.
     *
     * @param transportClass any class of the transport.
     * @return {@code enabled}, or {@code not enabled (pass --enable-native-access=... to silence the JDK warning)}.
     */
    public static String nativeAccessDetail(Class<?> transportClass)
    {
        return transportClass.getModule().isNativeAccessEnabled() ? "enabled"
                : "not enabled (pass --enable-native-access=" + nativeAccessFlag(transportClass) + " to silence the JDK warning)";
    }

    /**
     * Returns the property that names a transport's library.
     *
     * @param transport such as {@code ucx}.
     * @return {@code kvbridge.<transport>.library}.
     */
    public static String libraryProperty(String transport)
    {
        return "kvbridge." + transport + ".library";
    }

    /**
     * Returns the property that switches a transport off.
     *
     * @param transport such as {@code ucx}.
     * @return {@code kvbridge.<transport>.enabled}.
     */
    public static String enabledProperty(String transport)
    {
        return "kvbridge." + transport + ".enabled";
    }

    /**
     * Tells whether the kill switch is set: {@code -Dkvbridge.<transport>.enabled=false}.
     *
     * @param transport such as {@code ucx}.
     * @return the reason to report, or empty when the transport may load.
     * @throws KvBridgeException {@code CONFIG_INVALID} for a value other than true or false.
     */
    public static Optional<String> disabled(String transport)
    {
        String property = enabledProperty(transport);
        String value = System.getProperty(property);
        if (value == null || value.equalsIgnoreCase("true")) {
            return Optional.empty();
        }
        if (value.equalsIgnoreCase("false")) {
            return Optional.of(transport + " is switched off with -D" + property + "=false; remove the property to use it");
        }
        throw new KvBridgeException(ErrorCode.CONFIG_INVALID, "-D" + property + "=" + value + " is neither true nor false");
    }

    /**
     * Returns the library path configured for a transport.
     *
     * @param transport such as {@code ucx}.
     * @return the configured file or directory, or empty to use the linker's search path.
     */
    public static Optional<Path> configured(String transport)
    {
        String value = System.getProperty(libraryProperty(transport));
        return value == null || value.isBlank() ? Optional.empty() : Optional.of(Path.of(value.strip()));
    }

    /**
     * Resolves where to load one library of a transport from: the configured file when it has that
     * name, the configured directory (or the configured file's directory) joined with it, else the
     * bare name for the linker's search path.
     *
     * @param transport such as {@code ucx}.
     * @param soname such as {@code libucp.so.0}.
     * @return a path to load; relative (the bare name) when nothing is configured.
     */
    public static Path resolve(String transport, String soname)
    {
        Optional<Path> configured = configured(transport);
        if (configured.isEmpty()) {
            return Path.of(soname);
        }
        Path path = configured.get();
        if (Files.isDirectory(path)) {
            return path.resolve(soname);
        }
        Path file = path.getFileName();
        if (file != null && file.toString().equals(soname)) {
            return path;
        }
        Path parent = path.toAbsolutePath().getParent();
        return parent == null ? Path.of(soname) : parent.resolve(soname);
    }

    /**
     * Loads one library of a transport for the life of the JVM.
     *
     * @param transport such as {@code ucx}.
     * @param soname such as {@code libucp.so.0}.
     * @return its symbols.
     * @throws UnsatisfiedLinkError naming where it looked and the property that changes it.
     */
    @SuppressWarnings("restricted")
    public static SymbolLookup load(String transport, String soname)
    {
        Path path = resolve(transport, soname);
        try {
            return path.getParent() == null ? SymbolLookup.libraryLookup(soname, Arena.global()) : SymbolLookup.libraryLookup(path, Arena.global());
        }
        catch (IllegalArgumentException e) {
            String where = path.getParent() == null ? "on the dynamic linker's search path" : "at " + path;
            throw new UnsatisfiedLinkError(soname + " was not found " + where + " (" + e.getMessage() + "); install it, or point -D"
                    + libraryProperty(transport) + " at the library or its directory");
        }
    }

    /**
     * Makes a native status a typed error, worded the same for every library.
     *
     * @param code the error code the caller's contract promises.
     * @param function the C function that returned it.
     * @param status the numeric status.
     * @param meaning the library's name or text for it, or null.
     * @return the error: {@code function returned N (meaning)}.
     */
    public static KvBridgeException failure(ErrorCode code, String function, long status, String meaning)
    {
        return failure(code, function, status, meaning, null);
    }

    /**
     * Makes a native status a typed error that says what was being done.
     *
     * @param code the error code the caller's contract promises.
     * @param function the C function that returned it.
     * @param status the numeric status.
     * @param meaning the library's name or text for it, or null.
     * @param context what was being done, with the values involved (and any advice), or null.
     * @return the error: {@code function returned N (meaning) while context}.
     */
    public static KvBridgeException failure(ErrorCode code, String function, long status, String meaning, String context)
    {
        return new KvBridgeException(code, String.format(Locale.ROOT, "%s returned %d%s%s", function, status,
                meaning == null || meaning.isEmpty() ? "" : " (" + meaning + ")", context == null || context.isEmpty() ? "" : " while " + context));
    }

    /**
     * Binds one library's functions and collects every symbol it lacks, so a too-old library is
     * named with all that is missing at once.
     */
    public static final class Binder
    {
        private final String library;
        private final SymbolLookup lookup;
        private final String requirement;
        private final Linker linker = Linker.nativeLinker();
        private final List<String> missing = new ArrayList<>();

        /**
         * Creates a binder.
         *
         * @param library how messages name the library, such as {@code libucp.so.0}.
         * @param lookup its symbols.
         * @param requirement what version is needed, for the message, such as {@code UCX 1.13 or newer}.
         */
        public Binder(String library, SymbolLookup lookup, String requirement)
        {
            this.library = requireNonNull(library, "library is null");
            this.lookup = requireNonNull(lookup, "lookup is null");
            this.requirement = requireNonNull(requirement, "requirement is null");
        }

        /**
         * Binds a function.
         *
         * @param symbol its name.
         * @param descriptor its C signature.
         * @return the handle, or null when the symbol is missing (reported by {@link #finish()}).
         */
        @SuppressWarnings("restricted")
        public MethodHandle bind(String symbol, FunctionDescriptor descriptor)
        {
            Optional<java.lang.foreign.MemorySegment> address = lookup.find(symbol);
            if (address.isEmpty()) {
                missing.add(symbol);
                return null;
            }
            return linker.downcallHandle(address.get(), descriptor);
        }

        /**
         * Binds a function that may be missing in older versions of the library.
         *
         * @param symbol its name.
         * @param descriptor its C signature.
         * @return the handle, or empty.
         */
        @SuppressWarnings("restricted")
        public Optional<MethodHandle> bindOptional(String symbol, FunctionDescriptor descriptor)
        {
            return lookup.find(symbol).map(address -> linker.downcallHandle(address, descriptor));
        }

        /** {@return the symbols missing so far} */
        public List<String> missing()
        {
            return List.copyOf(missing);
        }

        /**
         * Ends binding.
         *
         * @throws UnsatisfiedLinkError naming every missing symbol.
         */
        public void finish()
        {
            if (!missing.isEmpty()) {
                throw new UnsatisfiedLinkError(library + " lacks " + missing.size() + " symbol" + (missing.size() == 1 ? "" : "s") + " kvbridge needs: "
                        + String.join(", ", missing) + "; " + requirement + " is required");
            }
        }
    }
}
