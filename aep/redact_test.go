package aep

import "testing"

func TestIsCredentialName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		// Codes, keys and phrases that unlock an account.
		{"recovery_code", true},
		{"backup_codes", true},
		{"auth_code", true},
		{"smsCode", true},
		{"Security code", true},
		{"ssh_key", true},
		{"seed_phrase", true},
		{"mnemonic", true},
		{"jwt", true},
		{"bearer", true},
		{"session_cookie", true},
		{"passkey", true},
		{"license_key", true},
		{"zip code", false},
		{"country_code", false},
		{"ssh_key_name", false},
		// The vocabulary, as keys and as titles.
		{"password", true},
		{"Password", true},
		{"new_password", true},
		{"newPassword", true},
		{"newpassword", true},
		{"Confirm your password", true},
		{"Password (at least 8 characters)", true},
		{"passwd", true},
		{"db_pass", true},
		{"passphrase", true},
		{"Passcode", true},
		{"client_secret", true},
		{"SECRET", true},
		{"token", true},
		{"githubToken", true},
		{"access-token", true},
		{"accesstoken", true},
		{"api_key", true},
		{"apiKey", true},
		{"APIKey", true},
		{"X-API-Key", true},
		{"apikey", true},
		{"OPENAI_API_KEY", true},
		{"private key", true},
		{"privateKey", true},
		{"AWS access key", true},
		{"pin", true},
		{"PIN", true},
		{"userPIN", true},
		{"PINCode", true},
		{"pin_code", true},
		{"Card PIN number", true},
		{"otp", true},
		{"TOTP", true},
		{"One-time code", true},
		{"one time pin", true},
		{"2FA code", true},
		{"mfa_code", true},
		{"Verification code", true},
		{"credentials", true},
		// Words that merely contain a vocabulary word.
		{"spinner", false},
		{"shipping", false},
		{"pinned", false},
		{"Pineapple count", false},
		{"tokenizer", false},
		{"secretary", false},
		{"passenger", false},
		{"compass", false},
		{"keyboard", false},
		// Names about a credential, not the credential.
		{"token_count", false},
		{"tokenCount", false},
		{"max_tokens", false},
		{"Token budget", false},
		{"password_length", false},
		{"min password length", false},
		{"password hint", false},
		{"api key name", false},
		{"token_url", false},
		{"secret name", false},
		{"private_key_path", false},
		// Unrelated.
		{"replicas", false},
		{"email", false},
		{"key", false},
		{"", false},
		{"___", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsCredentialName(tt.name); got != tt.want {
				t.Fatalf("IsCredentialName(%q): got %v; want %v (words %q)", tt.name, got, tt.want, nameWords(tt.name))
			}
		})
	}
}
