package io.rollcount.job.redis;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.Collection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;

/** The TLS socket factory of a {@code rediss://} {@link RedisEndpoint}. */
final class RedisTls {
    private RedisTls() {}

    /**
     * A socket factory that trusts exactly the CA certificate(s) of {@code caCertificatePem}, or the JVM's trust
     * store if it is null; {@code endpoint} names the endpoint in the error.
     */
    static SSLSocketFactory socketFactory(byte[] caCertificatePem, RedisEndpoint endpoint) {
        try {
            if (caCertificatePem == null) {
                return SSLContext.getDefault().getSocketFactory();
            }
            KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
            trust.load(null, null);
            Collection<? extends Certificate> certs = CertificateFactory.getInstance("X.509")
                    .generateCertificates(new ByteArrayInputStream(caCertificatePem));
            int i = 0;
            for (Certificate c : certs) trust.setCertificateEntry("redis-ca-" + i++, c);
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trust);
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(null, tmf.getTrustManagers(), null);
            return ctx.getSocketFactory();
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException("cannot set up TLS for " + endpoint + ": " + e.getMessage(), e);
        }
    }
}
