package io.kvbridge.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class NativeLibraryTest
{
    private static final String TRANSPORT = "native-library-test";

    @AfterEach
    void clearProperties()
    {
        System.clearProperty(NativeLibrary.libraryProperty(TRANSPORT));
        System.clearProperty(NativeLibrary.enabledProperty(TRANSPORT));
    }

    @Test
    void aProbeReportsNativeAccessOneWay()
    {
        // the build runs tests with --enable-native-access=ALL-UNNAMED
        assertEquals("enabled", NativeLibrary.nativeAccessDetail(NativeLibraryTest.class));
        assertEquals("ALL-UNNAMED", NativeLibrary.nativeAccessFlag(NativeLibraryTest.class));
    }

    @Test
    void theKillSwitchSaysHowToUndoIt()
    {
        assertTrue(NativeLibrary.disabled(TRANSPORT).isEmpty());
        System.setProperty(NativeLibrary.enabledProperty(TRANSPORT), "false");
        String reason = NativeLibrary.disabled(TRANSPORT).orElseThrow();
        assertTrue(reason.contains("-Dkvbridge.native-library-test.enabled=false"), reason);
        System.setProperty(NativeLibrary.enabledProperty(TRANSPORT), "maybe");
        assertEquals(ErrorCode.CONFIG_INVALID, assertThrows(KvBridgeException.class, () -> NativeLibrary.disabled(TRANSPORT)).code());
    }

    @Test
    void theNativeAccessFlagNamesWhatTheJvmNeeds()
    {
        // these tests run on the class path, where one flag covers the toolkit and every transport
        assertEquals("ALL-UNNAMED", NativeLibrary.nativeAccessFlag(NativeLibraryTest.class));
        // a transport in a named module is named; the toolkit too once it is a module of its own
        assertEquals("java.base", NativeLibrary.nativeAccessFlag(String.class));
    }

    @Test
    void aConfiguredFileOrDirectoryLocatesTheLibraryAndItsSiblings(@TempDir Path directory) throws Exception
    {
        assertEquals(Path.of("libfoo.so.0"), NativeLibrary.resolve(TRANSPORT, "libfoo.so.0"), "nothing configured: the linker searches");
        System.setProperty(NativeLibrary.libraryProperty(TRANSPORT), directory.toString());
        assertEquals(directory.resolve("libfoo.so.0"), NativeLibrary.resolve(TRANSPORT, "libfoo.so.0"));
        Path file = Files.createFile(directory.resolve("libfoo.so.0"));
        System.setProperty(NativeLibrary.libraryProperty(TRANSPORT), file.toString());
        assertEquals(file, NativeLibrary.resolve(TRANSPORT, "libfoo.so.0"));
        assertEquals(directory.resolve("libbar.so.0"), NativeLibrary.resolve(TRANSPORT, "libbar.so.0"), "a sibling of the configured file");
    }

    @Test
    void aMissingLibraryNamesWhereItLookedAndTheProperty(@TempDir Path directory)
    {
        System.setProperty(NativeLibrary.libraryProperty(TRANSPORT), directory.toString());
        UnsatisfiedLinkError error = assertThrows(UnsatisfiedLinkError.class, () -> NativeLibrary.load(TRANSPORT, "libnothing.so.0"));
        assertTrue(error.getMessage().contains(directory.resolve("libnothing.so.0").toString()), error.getMessage());
        assertTrue(error.getMessage().contains("-Dkvbridge.native-library-test.library"), error.getMessage());
    }

    @Test
    void theBinderCollectsEveryMissingSymbol()
    {
        NativeLibrary.Binder binder = new NativeLibrary.Binder("the C library", Linker.nativeLinker().defaultLookup(), "a C library");
        assertNotNull(binder.bind("strlen", FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG)));
        assertNull(binder.bind("kvbridge_no_such_symbol_one", FunctionDescriptor.ofVoid()));
        assertNull(binder.bind("kvbridge_no_such_symbol_two", FunctionDescriptor.ofVoid()));
        assertTrue(binder.bindOptional("kvbridge_no_such_symbol_three", FunctionDescriptor.ofVoid()).isEmpty(), "optional symbols are not required");
        assertEquals(List.of("kvbridge_no_such_symbol_one", "kvbridge_no_such_symbol_two"), binder.missing());
        UnsatisfiedLinkError error = assertThrows(UnsatisfiedLinkError.class, binder::finish);
        assertTrue(error.getMessage().contains("lacks 2 symbols") && error.getMessage().contains("kvbridge_no_such_symbol_two"), error.getMessage());
    }

    @Test
    void aNativeStatusBecomesATypedErrorNamingTheFunction()
    {
        KvBridgeException failure = NativeLibrary.failure(ErrorCode.TRANSFER_FAILED, "ucp_put_nbx", -3, "Input/output error");
        assertEquals(ErrorCode.TRANSFER_FAILED, failure.code());
        assertTrue(failure.getMessage().contains("ucp_put_nbx returned -3 (Input/output error)"), failure.getMessage());
        KvBridgeException withContext = NativeLibrary.failure(ErrorCode.PEER_UNKNOWN, "nixl_capi_make_xfer_req", -6, "ERROR_NOT_FOUND",
                "making a WRITE to peer 'b'");
        assertTrue(withContext.getMessage().contains("nixl_capi_make_xfer_req returned -6 (ERROR_NOT_FOUND) while making a WRITE to peer 'b'"),
                withContext.getMessage());
    }
}
