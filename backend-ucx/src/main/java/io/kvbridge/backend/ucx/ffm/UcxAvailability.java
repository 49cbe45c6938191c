package io.kvbridge.backend.ucx.ffm;

import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.transport.NativeLibrary;
import java.util.Optional;

/**
 * Whether UCX can run in this JVM, in the manner of Netty's {@code Epoll.isAvailable()}: the kill
 * switch {@code -Dkvbridge.ucx.enabled=false} is read first and, when set, nothing is loaded; else
 * the platform is checked, the libraries are loaded and bound once, and the first problem is kept
 * instead of being rethrown on every use. Thread-safe.
 */
public final class UcxAvailability
{
    private UcxAvailability()
    {
    }

    /** @return true when UCX is loaded, bound and new enough, and not switched off. */
    public static boolean isAvailable()
    {
        return unavailabilityCause().isEmpty();
    }

    /**
     * Tells why UCX cannot be used from this JVM, loading the libraries on first use unless the
     * kill switch is set.
     *
     * @return the problem with its fix, or empty when UCX can be used.
     */
    public static Optional<String> unavailabilityCause()
    {
        Optional<String> switchedOff = switchedOff();
        return switchedOff.isPresent() ? switchedOff : Optional.ofNullable(Loaded.PROBLEM);
    }

    /**
     * Reads the kill switch {@code -Dkvbridge.ucx.enabled=false}; loads nothing.
     *
     * @return why the transport is off, or empty when it may load.
     */
    public static Optional<String> switchedOff()
    {
        try {
            return NativeLibrary.disabled(UcpNative.TRANSPORT);
        }
        catch (KvBridgeException e) {
            return Optional.of(e.getMessage());
        }
    }

    /**
     * Tells whether the UCX libraries (or some of their symbols) could not be found at all, as
     * opposed to being found but unusable; loads them on first use.
     *
     * @return true when UCX is not installed, or too old to have the functions kvbridge calls.
     */
    public static boolean librariesMissing()
    {
        return Loaded.LIBRARIES_MISSING;
    }

    /**
     * Returns the value {@code --enable-native-access} needs for this code.
     *
     * @return {@code ALL-UNNAMED} on the class path, else the toolkit's and this module's names.
     */
    public static String moduleFlag()
    {
        return NativeLibrary.nativeAccessFlag(UcxAvailability.class);
    }

    /** Loads the libraries once; holds the first failure. */
    private static final class Loaded
    {
        static final String PROBLEM;
        static final boolean LIBRARIES_MISSING;

        static {
            String problem = null;
            boolean missing = false;
            try {
                problem = load();
            }
            catch (UnsatisfiedLinkError | ExceptionInInitializerError | NoClassDefFoundError e) {
                Throwable cause = e instanceof ExceptionInInitializerError && e.getCause() != null ? e.getCause() : e;
                if (cause instanceof IllegalCallerException denied) {
                    problem = nativeAccessDenied(denied);
                }
                else {
                    missing = true;
                    problem = cause.getMessage() + "; install UCX 1.13 or newer (Debian/Ubuntu: apt-get install -y libucx0), or point -D"
                            + NativeLibrary.libraryProperty(UcpNative.TRANSPORT) + " at libucp.so.0 or the directory holding it";
                }
            }
            catch (IllegalCallerException e) {
                problem = nativeAccessDenied(e);
            }
            PROBLEM = problem;
            LIBRARIES_MISSING = missing;
        }

        private static String load()
        {
            String arch = System.getProperty("os.arch");
            if (!System.getProperty("os.name").startsWith("Linux") || !(arch.equals("amd64") || arch.equals("aarch64"))) {
                return "the UCX transport supports 64-bit Linux (amd64, aarch64), this JVM runs on " + System.getProperty("os.name") + "/" + arch;
            }
            if (!UcpNative.SIGNALS_LEFT_TO_JVM) {
                return "could not clear UCX_ERROR_SIGNALS before loading UCX (setenv failed); UCX's signal handlers would crash the JVM";
            }
            String version = UcpContext.version();
            if (!UcpContext.supportedVersion(version)) {
                return "UCX " + version + " is installed but kvbridge needs 1.13 or newer; install a newer libucx0";
            }
            return null;
        }

        private static String nativeAccessDenied(IllegalCallerException e)
        {
            return "native access is denied: " + e.getMessage() + "; run java with --enable-native-access=" + moduleFlag();
        }
    }
}
