import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

/**
 * Starts DynamoDB Local exactly as its own main() does, but listening on 127.0.0.1 only.
 *
 * With -Dretry.parent.pid=PID it also goes with its parent: a watchdog thread exits the JVM as soon as
 * that process is gone, however it ended (SIGKILL or SIGTERM of a kernel included), so no server
 * outlives the kernel that started it.
 */
public class LoopbackDynamoDBLocal {
    public static void main(String[] args) throws Exception {
        watchParent(System.getProperty("retry.parent.pid"));
        DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
        Field field = DynamoDBProxyServer.class.getDeclaredField("server");
        field.setAccessible(true);
        Server jetty = (Server) field.get(proxy);
        for (Connector connector : jetty.getConnectors()) {
            ((ServerConnector) connector).setHost("127.0.0.1");
        }
        proxy.start();
        System.out.println("DynamoDB Local listening on 127.0.0.1");
        proxy.join();
    }

    private static void watchParent(String pid) {
        if (pid == null || pid.isEmpty()) {
            return;
        }
        long parent = Long.parseLong(pid);
        Thread watchdog = new Thread(() -> {
            while (true) {
                boolean alive = ProcessHandle.of(parent).map(ProcessHandle::isAlive).orElse(false);
                if (!alive) {
                    Runtime.getRuntime().halt(0);  // in memory: nothing to save
                }
                try {
                    Thread.sleep(250);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "parent-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
    }
}
