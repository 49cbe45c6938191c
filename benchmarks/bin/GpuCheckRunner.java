import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;
import java.io.PrintWriter;

/** Runs the named test classes on the JUnit platform without Maven; exits 1 on any failure, 2 when all were skipped. */
public final class GpuCheckRunner
{
    public static void main(String[] args)
    {
        LauncherDiscoveryRequestBuilder request = LauncherDiscoveryRequestBuilder.request();
        for (String name : args) {
            request.selectors(selectClass(name));
        }
        LauncherDiscoveryRequest discovery = request.build();
        Launcher launcher = LauncherFactory.create();
        SummaryGeneratingListener listener = new SummaryGeneratingListener();
        launcher.execute(discovery, listener);
        TestExecutionSummary summary = listener.getSummary();
        summary.printTo(new PrintWriter(System.out, true));
        summary.printFailuresTo(new PrintWriter(System.out, true), 20);
        if (summary.getTotalFailureCount() > 0) {
            System.exit(1);
        }
        System.exit(summary.getTestsSucceededCount() == 0 ? 2 : 0);
    }
}
