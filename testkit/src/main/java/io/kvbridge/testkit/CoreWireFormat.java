package io.kvbridge.testkit;

import io.kvbridge.spi.geometry.CacheGeometry;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Optional;

/**
 * kvbridge-core's geometry wire format, found by name: the testkit depends on the API only, so a
 * layout's tests that put kvbridge-core beside it get the real format without a class of their own.
 */
final class CoreWireFormat
{
    static final String CLASS_NAME = "io.kvbridge.core.tools.GeometryRoundTrip";

    private CoreWireFormat()
    {
    }

    static Optional<GeometryWireFormat> find()
    {
        Class<?> type;
        try {
            type = Class.forName(CLASS_NAME, true, CoreWireFormat.class.getClassLoader());
        }
        catch (ClassNotFoundException e) {
            return Optional.empty();
        }
        MethodHandle roundTrip;
        try {
            roundTrip = MethodHandles.publicLookup().findStatic(type, "roundTrip", MethodType.methodType(CacheGeometry.class, CacheGeometry.class));
        }
        catch (ReflectiveOperationException e) {
            throw new IllegalStateException(CLASS_NAME + " is on the class path without a public static roundTrip(CacheGeometry): "
                    + "kvbridge-core and kvbridge-testkit of different versions?", e);
        }
        return Optional.of(geometry -> invoke(roundTrip, geometry));
    }

    private static CacheGeometry invoke(MethodHandle roundTrip, CacheGeometry geometry)
    {
        try {
            return (CacheGeometry) roundTrip.invokeExact(geometry);
        }
        catch (RuntimeException | Error e) {
            throw e;
        }
        catch (Throwable e) {
            throw new IllegalStateException("the wire round trip threw " + e, e);
        }
    }
}
