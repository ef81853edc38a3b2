package corpus

import (
	"fmt"
	"os"
	"strings"

	"github.com/minio/minio-go/v7/pkg/credentials"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// s3Credentials returns the credentials an S3 source signs its requests with, by
// s3.Identity:
//
//   - none: static keys from $RAGOPS_S3_ACCESS_KEY and $RAGOPS_S3_SECRET_KEY (from the Corpus's
//     secretRef); with neither set the requests are anonymous.
//   - WebIdentity: the projected ServiceAccount token at $RAGOPS_S3_WEB_IDENTITY_TOKEN_FILE,
//     read again at every refresh (the kubelet rotates it), exchanged at
//     s3.Identity.WebIdentity.STSEndpoint by AssumeRoleWithWebIdentity for temporary keys
//     (minio-go credentials.STSWebIdentity), renewed before they expire.
//   - IAM: minio-go's IAM provider, which tries in order AWS_WEB_IDENTITY_TOKEN_FILE with
//     AWS_ROLE_ARN (at s3.Identity.STSEndpoint when set), the ECS and EKS Pod Identity
//     container endpoints, then EC2 instance metadata.
//
// Errors: only one static key set; a WebIdentity without its token file variable; an unknown
// identity type. Refused tokens surface at the first request.
func s3Credentials(s3 *ragopsv1alpha1.S3Source) (*credentials.Credentials, error) {
	id := s3.Identity
	if id == nil {
		access, secret := os.Getenv(plan.EnvS3AccessKey), os.Getenv(plan.EnvS3SecretKey)
		if (access == "") != (secret == "") {
			return nil, fmt.Errorf("only one of $%s and $%s is set", plan.EnvS3AccessKey, plan.EnvS3SecretKey)
		}
		return credentials.NewStaticV4(access, secret, ""), nil
	}
	switch id.Type {
	case ragopsv1alpha1.S3IdentityWebIdentity:
		if id.WebIdentity == nil {
			return nil, fmt.Errorf("identity type %s without webIdentity", id.Type)
		}
		file := os.Getenv(plan.EnvS3WebIdentityTokenFile)
		if file == "" {
			return nil, fmt.Errorf("identity type %s: $%s is not set (the projected token the controller mounts)", id.Type, plan.EnvS3WebIdentityTokenFile)
		}
		wi := id.WebIdentity
		token := func() (*credentials.WebIdentityToken, error) {
			b, err := os.ReadFile(file)
			if err != nil {
				return nil, fmt.Errorf("web identity token: %w", err)
			}
			return &credentials.WebIdentityToken{Token: strings.TrimSpace(string(b))}, nil
		}
		return credentials.NewSTSWebIdentity(wi.STSEndpoint, token,
			func(i *credentials.STSWebIdentity) { i.RoleARN = wi.RoleARN })
	case ragopsv1alpha1.S3IdentityIAM:
		return credentials.NewIAM(id.STSEndpoint), nil
	}
	return nil, fmt.Errorf("identity type %q: want WebIdentity or IAM", id.Type)
}
