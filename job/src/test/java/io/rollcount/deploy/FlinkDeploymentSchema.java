package io.rollcount.deploy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import java.io.IOException;
import java.io.InputStream;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The Flink Kubernetes Operator's own schema of a {@code FlinkDeployment}: the CRD yaml its Maven artifact
 * ({@code flink-kubernetes-operator-api}, version pinned in the root pom) publishes, read from the jar on the
 * test class path, as a JSON schema that {@code com.networknt:json-schema-validator} checks manifests against.
 *
 * <p>Two adjustments make it say what the Kubernetes API server and {@code kubectl apply} say:
 * <ul>
 *   <li>an object schema that lists its properties admits no others ({@code additionalProperties: false}):
 *       the API server drops unknown fields of a structural schema and {@code kubectl apply} refuses them
 *       (strict field validation), so a misspelt field is an error here too;</li>
 *   <li>{@code x-kubernetes-int-or-string: true} becomes "an integer or a string".</li>
 * </ul>
 * And one widening, {@link #withFlinkVersion}: the newest operator artifact served here (1.10.0) predates
 * Flink 2, so its {@code flinkVersion} enum stops at {@code v1_20}; the test adds exactly the pom's Flink
 * version to that one enum and checks everything else as published.
 */
final class FlinkDeploymentSchema {
    static final String CRD = "META-INF/fabric8/flinkdeployments.flink.apache.org-v1.yml";
    static final String API_VERSION = "v1beta1";

    private final ObjectNode schema;
    private final JsonSchema compiled;

    private FlinkDeploymentSchema(ObjectNode schema) {
        this.schema = schema;
        this.compiled =
                JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V4).getSchema(schema);
    }

    /** The {@value #API_VERSION} schema of the operator's CRD, from the operator's jar. */
    static FlinkDeploymentSchema fromOperatorJar() throws IOException {
        JsonNode crd;
        try (InputStream in = FlinkDeploymentSchema.class.getClassLoader().getResourceAsStream(CRD)) {
            if (in == null)
                throw new IllegalStateException(
                        CRD + " is not on the class path (flink-kubernetes-operator-api, test scope)");
            crd = new YAMLMapper().readTree(in);
        }
        for (JsonNode v : crd.path("spec").path("versions")) {
            if (API_VERSION.equals(v.path("name").asText())) {
                ObjectNode s =
                        (ObjectNode) v.path("schema").path("openAPIV3Schema").deepCopy();
                kubernetesSemantics(s);
                objectRoot(
                        s,
                        crd.path("spec").path("group").asText() + "/" + API_VERSION,
                        crd.path("spec").path("names").path("kind").asText());
                return new FlinkDeploymentSchema(s);
            }
        }
        throw new IllegalStateException(CRD + " has no version " + API_VERSION);
    }

    /** This schema with {@code flinkVersion} (e.g. {@code v2_2}) added to the enum of {@code spec.flinkVersion}. */
    FlinkDeploymentSchema withFlinkVersion(String flinkVersion) {
        ObjectNode s = schema.deepCopy();
        ArrayNode versions = (ArrayNode) s.path("properties")
                .path("spec")
                .path("properties")
                .path("flinkVersion")
                .path("enum");
        if (versions.isMissingNode() || !versions.isArray())
            throw new IllegalStateException("the CRD has no spec.flinkVersion enum");
        versions.add(flinkVersion);
        return new FlinkDeploymentSchema(s);
    }

    /** The Flink versions this schema's {@code spec.flinkVersion} admits. */
    List<String> flinkVersions() {
        List<String> out = new java.util.ArrayList<>();
        schema.path("properties")
                .path("spec")
                .path("properties")
                .path("flinkVersion")
                .path("enum")
                .forEach(n -> out.add(n.asText()));
        return out;
    }

    /** Every violation of the schema, as "{@code $.path.of.the.field}: message", sorted by path; empty when valid. */
    List<String> violations(JsonNode manifest) {
        return compiled.validate(manifest).stream()
                .sorted(Comparator.comparing(
                                (ValidationMessage m) -> m.getInstanceLocation().toString())
                        .thenComparing(ValidationMessage::getMessage))
                .map(m -> m.getMessage().startsWith(m.getInstanceLocation() + ":")
                        ? m.getMessage()
                        : m.getInstanceLocation() + ": " + m.getMessage())
                .toList();
    }

    /**
     * The fields every Kubernetes object has at its root, which a CRD's schema leaves to the API server:
     * {@code apiVersion} and {@code kind} of this resource, and {@code metadata} with a name (ObjectMeta, whose
     * other fields the API server checks itself).
     */
    private static void objectRoot(ObjectNode s, String apiVersion, String kind) {
        ObjectNode props = (ObjectNode) s.path("properties");
        props.putObject("apiVersion").put("type", "string").putArray("enum").add(apiVersion);
        props.putObject("kind").put("type", "string").putArray("enum").add(kind);
        ObjectNode meta = props.putObject("metadata");
        meta.put("type", "object").putArray("required").add("name");
        ObjectNode mp = meta.putObject("properties");
        mp.putObject("name").put("type", "string").put("pattern", "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
        mp.putObject("namespace").put("type", "string");
        mp.putObject("labels")
                .put("type", "object")
                .putObject("additionalProperties")
                .put("type", "string");
        mp.putObject("annotations")
                .put("type", "object")
                .putObject("additionalProperties")
                .put("type", "string");
        s.putArray("required").add("apiVersion").add("kind").add("metadata").add("spec");
    }

    private static void kubernetesSemantics(JsonNode node) {
        if (node instanceof ObjectNode o) {
            if (o.has("properties") && o.path("properties").isObject() && !o.has("additionalProperties"))
                o.put("additionalProperties", false);
            if (o.path("x-kubernetes-int-or-string").asBoolean(false)) {
                o.remove("x-kubernetes-int-or-string");
                ArrayNode anyOf = o.putArray("anyOf");
                anyOf.addObject().put("type", "integer");
                anyOf.addObject().put("type", "string");
            }
            // "properties" maps names to schemas: recurse into each schema, never treat the map as one
            for (Iterator<Map.Entry<String, JsonNode>> it = o.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                if (e.getKey().equals("properties")) e.getValue().forEach(FlinkDeploymentSchema::kubernetesSemantics);
                else kubernetesSemantics(e.getValue());
            }
        } else if (node instanceof ArrayNode a) {
            a.forEach(FlinkDeploymentSchema::kubernetesSemantics);
        }
    }
}
