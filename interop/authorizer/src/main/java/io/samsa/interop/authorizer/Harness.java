package io.samsa.interop.authorizer;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.metadata.authorizer.StandardAcl;
import org.apache.kafka.metadata.authorizer.StandardAuthorizer;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;

/**
 * Answers authorization questions with Apache Kafka's StandardAuthorizer.
 *
 * <p>One command per line on stdin, fields separated by tabs; in a field
 * "\\" is a backslash, "\t" a tab, "\n" a newline, and a field that is
 * exactly "\N" is null. Every command prints exactly one line:
 *
 * <pre>
 * config   SUPER_USERS ALLOW_EVERYONE         new configuration, no ACLs: "ok" or "error CLASS"
 * acl      RT NAME PT PRINCIPAL HOST OP PERM  adds an ACL (codes as on the wire): "ok"
 * authorize PTYPE PNAME HOST OP RT NAME       "ALLOWED" or "DENIED" (or "error CLASS")
 * bytype   PTYPE PNAME HOST OP RT             authorizeByResourceType: same answers
 * describe RT NAME PT PRINCIPAL HOST OP PERM  the indexes (0-based, since config) of the
 *                                             ACLs the filter selects, ascending, or "-"
 * validate CIDR RT NAME PT PRINCIPAL HOST OP PERM
 *                                             the error code CreateAcls gives this ACL
 * </pre>
 *
 * HOST in authorize and bytype is an IP literal, the client's address.
 */
public final class Harness {
    /** HARNESS_DEBUG=1 prints the stack of every exception to stderr. */
    private static final boolean DEBUG = System.getenv("HARNESS_DEBUG") != null;

    private final StandardAuthorizer authorizer = new StandardAuthorizer();
    private final List<AclBinding> acls = new ArrayList<>();
    private final Map<Uuid, StandardAcl> snapshot = new HashMap<>();
    private final Map<AclBinding, Integer> indexOf = new HashMap<>();
    private final Method validateNewAcl;

    private Harness() throws Exception {
        authorizer.withPluginMetrics(new PluginMetricsImpl(new Metrics(), Map.of()));
        authorizer.configure(Map.of());
        authorizer.completeInitialLoad();
        // AclControlManager.validateNewAcl(AclBinding, boolean cidrSupported)
        // is package-private: reach it by reflection rather than copy it.
        Class<?> acm = Class.forName("org.apache.kafka.controller.AclControlManager");
        validateNewAcl = acm.getDeclaredMethod("validateNewAcl", AclBinding.class, boolean.class);
        validateNewAcl.setAccessible(true);
    }

    public static void main(String[] args) throws Exception {
        Harness h = new Harness();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        String line;
        while ((line = in.readLine()) != null) {
            String answer;
            try {
                answer = h.run(split(line));
            } catch (Exception e) {
                answer = "error " + e.getClass().getSimpleName();
                if (DEBUG) {
                    System.err.println("line: " + line);
                    e.printStackTrace();
                }
            }
            out.write(answer);
            out.write('\n');
        }
        out.flush();
    }

    private String run(String[] f) throws Exception {
        switch (f[0]) {
            case "config": {
                Map<String, Object> cfg = new HashMap<>();
                if (f[1] != null) cfg.put(StandardAuthorizer.SUPER_USERS_CONFIG, f[1]);
                if (f[2] != null) cfg.put(StandardAuthorizer.ALLOW_EVERYONE_IF_NO_ACL_IS_FOUND_CONFIG, f[2]);
                acls.clear();
                snapshot.clear();
                indexOf.clear();
                authorizer.loadSnapshot(snapshot);
                authorizer.configure(cfg);
                return "ok";
            }
            case "acl": {
                StandardAcl acl = new StandardAcl(
                    ResourceType.fromCode(code(f[1])), f[2], PatternType.fromCode(code(f[3])),
                    f[4], f[5], AclOperation.fromCode(code(f[6])), AclPermissionType.fromCode(code(f[7])));
                Uuid id = Uuid.randomUuid();
                authorizer.addAcl(id, acl);
                indexOf.put(acl.toBinding(), acls.size());
                acls.add(acl.toBinding());
                return "ok";
            }
            case "authorize": {
                Action action = new Action(AclOperation.fromCode(code(f[4])),
                    new ResourcePattern(ResourceType.fromCode(code(f[5])), f[6], PatternType.LITERAL), 1, true, true);
                return authorizer.authorize(context(f[1], f[2], f[3]), List.of(action)).get(0).name();
            }
            case "bytype": {
                AuthorizationResult r = authorizer.authorizeByResourceType(context(f[1], f[2], f[3]),
                    AclOperation.fromCode(code(f[4])), ResourceType.fromCode(code(f[5])));
                return r.name();
            }
            case "describe": {
                AclBindingFilter filter = new AclBindingFilter(
                    new ResourcePatternFilter(ResourceType.fromCode(code(f[1])), f[2], PatternType.fromCode(code(f[3]))),
                    new AccessControlEntryFilter(f[4], f[5], AclOperation.fromCode(code(f[6])),
                        AclPermissionType.fromCode(code(f[7]))));
                List<Integer> hits = new ArrayList<>();
                for (AclBinding b : authorizer.acls(filter)) hits.add(indexOf.get(b));
                if (hits.isEmpty()) return "-";
                hits.sort(null);
                StringBuilder sb = new StringBuilder();
                for (int i : hits) sb.append(sb.length() == 0 ? "" : " ").append(i);
                return sb.toString();
            }
            case "validate":
                return Short.toString(validate(f[1].equals("1"), f));
            default:
                throw new IllegalArgumentException("unknown command " + f[0]);
        }
    }

    /**
     * The error code Kafka's CreateAcls gives one creation once the request
     * parsed: building the binding (CreateAclsRequest.aclBinding; it throws
     * for ANY values, which fails the request with UNKNOWN_SERVER_ERROR),
     * the two checks of kafka.server.AclApis.handleCreateAcls (repeated
     * here because they live in the broker's Scala request handler), then
     * the controller's AclControlManager.validateNewAcl.
     */
    private short validate(boolean cidrSupported, String[] f) throws Exception {
        AclBinding binding;
        try {
            binding = new AclBinding(
                new ResourcePattern(ResourceType.fromCode(code(f[2])), f[3], PatternType.fromCode(code(f[4]))),
                new AccessControlEntry(f[5], f[6], AclOperation.fromCode(code(f[7])),
                    AclPermissionType.fromCode(code(f[8]))));
        } catch (IllegalArgumentException e) {
            return ApiError.fromThrowable(e).error().code();
        }
        ResourcePattern p = binding.pattern();
        if (p.resourceType() == ResourceType.CLUSTER && !p.name().equals("kafka-cluster")) return 42;
        if (p.name().isEmpty()) return 42;
        try {
            validateNewAcl.invoke(null, binding, cidrSupported);
        } catch (InvocationTargetException e) {
            return ApiError.fromThrowable(e.getCause()).error().code();
        }
        return 0;
    }

    private static AuthorizableRequestContext context(String type, String name, String host) throws Exception {
        KafkaPrincipal principal = new KafkaPrincipal(type, name);
        InetAddress address = InetAddress.getByName(host);
        return new AuthorizableRequestContext() {
            public String listenerName() { return "PLAINTEXT"; }
            public SecurityProtocol securityProtocol() { return SecurityProtocol.PLAINTEXT; }
            public KafkaPrincipal principal() { return principal; }
            public InetAddress clientAddress() { return address; }
            public int requestType() { return 0; }
            public int requestVersion() { return 0; }
            public String clientId() { return "difftest"; }
            public int correlationId() { return 0; }
        };
    }

    private static byte code(String s) {
        return Byte.parseByte(s);
    }

    static String[] split(String line) {
        List<String> fields = new ArrayList<>();
        StringBuilder sb = new StringBuilder();
        boolean isNull = false;
        for (int i = 0; i <= line.length(); i++) {
            char c = i < line.length() ? line.charAt(i) : '\t';
            if (c == '\t') {
                fields.add(isNull ? null : sb.toString());
                sb.setLength(0);
                isNull = false;
            } else if (c == '\\' && i + 1 < line.length()) {
                char n = line.charAt(++i);
                switch (n) {
                    case 't': sb.append('\t'); break;
                    case 'n': sb.append('\n'); break;
                    case 'N': isNull = true; break;
                    default: sb.append(n);
                }
            } else {
                sb.append(c);
            }
        }
        return fields.toArray(new String[0]);
    }
}
